"""cyrank.io: our SVMlight reader equals scikit-learn's, dump/load round trips, safe model files."""
import bz2
import gzip
import io as stdio
import json
import locale
import math
import pickle
import struct
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.datasets import load_svmlight_file

from cyrank import _svmlight
from cyrank import io as cio
from cyrank._validation import check_ranking_data
from cyrank.io import dump_svmlight, load_model, load_svmlight, register_model, save_model


# ---------------------------------------------------------------------------------------------- helpers
def sk_load(path, **kw):
    return load_svmlight_file(str(path), query_id=True, **kw)


def assert_same_as_sklearn(ours, ref, has_qid=True):
    X, y, qid = ours
    Xs, ys, qs = ref
    assert sp.isspmatrix_csr(X) and X.shape == Xs.shape
    assert X.dtype == Xs.dtype
    assert X.indices.dtype == np.int64 and X.indptr.dtype == np.int64
    assert np.array_equal(X.indptr, Xs.indptr)
    assert np.array_equal(X.indices, Xs.indices)
    # bit-for-bit (NaN payloads and the sign of zero included)
    assert X.data.tobytes() == Xs.data.astype(X.dtype).tobytes()
    assert y.dtype == np.float64 and y.tobytes() == ys.tobytes()
    assert qid.dtype == np.int64
    if has_qid:
        assert np.array_equal(qid, qs)
    else:
        assert qs.size == 0 and np.array_equal(qid, np.zeros(X.shape[0], np.int64))


NUMBER_FORMATS = [
    lambda r: "%d" % r.integers(-1000, 1000),
    lambda r: "%.3f" % r.normal(),
    lambda r: "%.17g" % (r.normal() * 10.0 ** r.integers(-30, 30)),
    lambda r: "%.6e" % (r.normal() * 10.0 ** r.integers(-300, 300)),
    lambda r: "%.2E" % r.normal(),
    lambda r: repr(float(r.normal())),
    lambda r: "%.25f" % r.random(),                  # > 19 significant digits: strtod path
    lambda r: "".join(r.choice(list("0123456789"), r.integers(1, 30))) + "e%d" % r.integers(-330, 310),
    lambda r: r.choice(["-0", "+1.5", ".5", "5.", "007.50", "0.0", "-0.0", "1e-320", "4.9e-324", "1E+2",
                        "9007199254740993", "9007199254740992", "1e22", "1e23", "123456789012345678901234"]),
]


def random_svmlight(rng, n_rows=60, n_feat=40, with_qid=True, zero_based=False, crlf=False):
    """Random LETOR text with comments, blank lines, odd spacing and every number format above."""
    lines = ["# a header comment", ""]
    for i in range(n_rows):
        parts = [NUMBER_FORMATS[rng.integers(len(NUMBER_FORMATS))](rng)]
        if with_qid:
            parts.append("qid:%d" % (i // 7 - 3))
        k = rng.integers(0, min(12, n_feat))
        idx = np.sort(rng.choice(n_feat, size=k, replace=False)) + (0 if zero_based else 1)
        for j in idx:
            parts.append("%d:%s" % (j, NUMBER_FORMATS[rng.integers(len(NUMBER_FORMATS))](rng)))
        sep = rng.choice([" ", "  ", "\t", " \t "])
        line = sep.join(parts)
        if rng.random() < 0.3:
            line += rng.choice([" # docid = %d" % i, "#c:1 2:3", "\t# x"])
        if rng.random() < 0.2:
            line = "  " + line + "   "
        lines.append(line)
        if rng.random() < 0.1:
            lines.append(rng.choice(["", "   ", "# only a comment", "\t"]))
    if zero_based:
        lines.append("1 qid:99 0:2.5 3:1" if with_qid else "1 0:2.5 3:1")  # make sure index 0 occurs
    text = ("\r\n" if crlf else "\n").join(lines)
    return text + ("" if rng.random() < 0.5 else "\n")


# ------------------------------------------------------------------------------------ reader == sklearn
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("with_qid", [True, False])
@pytest.mark.parametrize("zero_based", [False, True])
def test_reader_matches_sklearn_on_random_files(tmp_path, seed, with_qid, zero_based):
    rng = np.random.default_rng(seed)
    path = tmp_path / "data.svm"
    path.write_text(random_svmlight(rng, with_qid=with_qid, zero_based=zero_based, crlf=seed % 3 == 0))
    for dtype in (np.float64, np.float32):
        ours = load_svmlight(path, dtype=dtype, engine="cyrank")
        assert_same_as_sklearn(ours, sk_load(path, dtype=dtype), has_qid=with_qid)
    for zb in (True, False) if not zero_based else (True,):
        assert_same_as_sklearn(load_svmlight(path, zero_based=zb), sk_load(path, zero_based=zb), has_qid=with_qid)
    # the sklearn engine returns the same normalised result
    ours_sk = load_svmlight(path, engine="sklearn")
    ours = load_svmlight(path)
    assert type(ours_sk[0]) is type(ours[0]) and ours_sk[0].indices.dtype == np.int64
    assert (ours_sk[0] != ours[0]).nnz == 0 and np.array_equal(ours_sk[2], ours[2])


def test_compressed_files_and_file_objects(tmp_path):
    rng = np.random.default_rng(7)
    text = random_svmlight(rng).encode()
    plain = tmp_path / "d.svm"
    plain.write_bytes(text)
    gz = tmp_path / "d.svm.gz"
    gz.write_bytes(gzip.compress(text))
    bz = tmp_path / "d.svm.bz2"
    bz.write_bytes(bz2.compress(text))
    ref = sk_load(plain)
    for p in (plain, gz, bz, str(gz)):
        assert_same_as_sklearn(load_svmlight(p), ref)
        assert_same_as_sklearn(load_svmlight(p, engine="sklearn"), ref)
    assert_same_as_sklearn(sk_load(gz), ref)
    with open(gz, "rb") as fh:  # gzip recognised by its magic bytes too
        assert_same_as_sklearn(load_svmlight(fh), ref)
    assert_same_as_sklearn(load_svmlight(stdio.BytesIO(text)), ref)
    with open(plain) as fh, pytest.raises(TypeError, match="text mode"):
        load_svmlight(fh)
    (tmp_path / "bad.svm.gz").write_bytes(gzip.compress(text)[:50])
    with pytest.raises(ValueError, match="decompress"):
        load_svmlight(tmp_path / "bad.svm.gz")


def test_special_values_match_sklearn(tmp_path):
    path = tmp_path / "s.svm"
    path.write_text("inf qid:-9223372036854775808 1:nan 2:-inf 3:Infinity 4:-NaN 5:1e400 6:-1e-400\n"
                    "+2 qid:9223372036854775807 1:-0 7:+.5e-3\n"
                    "3 qid:+5\n")
    X, y, qid = ours = load_svmlight(path)
    assert_same_as_sklearn(ours, sk_load(path))
    assert X.shape == (3, 7) and np.isinf(y[0]) and qid[0] == np.iinfo(np.int64).min
    assert math.copysign(1.0, X.data[X.indptr[1]]) == -1.0  # "-0" keeps its sign, as float() does


def test_zero_based_rule_and_n_features(tmp_path):
    p1 = tmp_path / "one.svm"
    p1.write_text("1 qid:1 2:1 5:2\n0 qid:1 1:3\n")
    p0 = tmp_path / "zero.svm"
    p0.write_text("1 qid:1 0:1 5:2\n0 qid:1 1:3\n")
    X, _, _ = load_svmlight(p1)
    assert X.shape == (2, 5) and X[1, 0] == 3 and X[0, 4] == 2            # auto: one-based, shifted
    X, _, _ = load_svmlight(p0)
    assert X.shape == (2, 6) and X[0, 0] == 1 and X[1, 1] == 3            # auto: index 0 seen -> zero-based
    X, _, _ = load_svmlight(p1, zero_based=True)
    assert X.shape == (2, 6) and X[0, 2] == 1
    for p, zb in [(p1, "auto"), (p0, "auto"), (p1, True), (p1, False), (p0, True)]:
        assert_same_as_sklearn(load_svmlight(p, zero_based=zb), sk_load(p, zero_based=zb))
        assert_same_as_sklearn(load_svmlight(p, zero_based=zb, n_features=9), sk_load(p, zero_based=zb, n_features=9))
    with pytest.raises(ValueError, match="n_features was set to 3, but .* contains 5 features"):
        load_svmlight(p1, n_features=3)
    with pytest.raises(ValueError, match="line 1: invalid feature index 0"):
        load_svmlight(p0, zero_based=False)
    empty = tmp_path / "empty.svm"
    empty.write_text("# nothing\n\n1\n2 # no features\n")
    assert_same_as_sklearn(load_svmlight(empty), sk_load(empty), has_qid=False)
    with pytest.raises(ValueError, match="dtype"):
        load_svmlight(p1, dtype=np.int64)
    with pytest.raises(ValueError, match="zero_based"):
        load_svmlight(p1, zero_based="yes")
    with pytest.raises(ValueError, match="engine"):
        load_svmlight(p1, engine="fast")


def test_parse_float_is_exactly_pythons_float():
    rng = np.random.default_rng(0)
    tokens = []
    bits = rng.integers(0, 2**63, 3000, dtype=np.int64).view(np.float64)
    bits = bits[np.isfinite(bits)]
    for v in bits[:1500]:
        tokens += [repr(float(v)), "%.17g" % v, "%.15g" % v, "%.20e" % v]
    for _ in range(3000):
        digits = "".join(rng.choice(list("0123456789"), rng.integers(1, 40)))
        cut = rng.integers(0, len(digits) + 1)
        tokens.append(rng.choice(["", "-", "+"]) + digits[:cut] + "." + digits[cut:] + "e%d" % rng.integers(-340, 330))
        tokens.append(digits + "e%d" % rng.integers(-30, 30))
    for m in (2**53 - 1, 2**53, 2**53 + 1, 2**53 + 2, 10**19 - 1, 10**19, 2**64 - 1):
        for e in (-23, -22, -1, 0, 1, 22, 23):
            tokens.append(f"{m}e{e}")
    tokens += ["2.2250738585072011e-308", "2.4703282292062327e-324", "2.4703282292062328e-324",
               "1.7976931348623157e308", "1.7976931348623159e308", "0e999999999", "-0", ".0", "0.",
               "inf", "-Infinity", "nan", "+NaN", "1" * 400, "0." + "0" * 400 + "1", "1e-99999999999"]
    for t in tokens:
        got, want = _svmlight._parse_float(t.encode()), float(t)
        assert struct.pack("<d", got) == struct.pack("<d", want) or (math.isnan(got) and math.isnan(want)), t
    for bad in ["", ".", "-", "e5", ".e5", "1e", "1e+", "0x1p3", "1_0", "--1", "+-1", "nan(1)", "infi", "1.5.5",
                " 1", "1 ", "in", "1d5", "١"]:
        with pytest.raises(ValueError):
            _svmlight._parse_float(bad.encode())


def test_strtod_fallback_under_a_comma_locale(tmp_path):
    old = locale.setlocale(locale.LC_NUMERIC)
    for name in ("de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "de_DE"):
        try:
            locale.setlocale(locale.LC_NUMERIC, name)
            break
        except locale.Error:
            continue
    else:
        pytest.skip("no locale with a comma decimal point installed")
    try:
        assert cio._decimal_point() == b","
        path = tmp_path / "long.svm"
        path.write_text("0.1234567890123456789012 1:3.14159265358979323846264 2:2.5\n")
        X, y, _ = load_svmlight(path)
        assert y[0] == float("0.1234567890123456789012") and X.data[0] == float("3.14159265358979323846264")
    finally:
        locale.setlocale(locale.LC_NUMERIC, old)


# ------------------------------------------------------------------------------------------ malformed
GOOD = "2 qid:1 1:0.5 3:1\n# comment line\n"
MALFORMED = [
    # (third line, message fragment, does sklearn also refuse it?)
    ("abc qid:1 1:2", "label 'abc' is not a number", True),
    ("1:2 3:4", "each line must start with its label", True),
    ("1 qid:1 3 4:5", "feature '3' has no ':'", True),
    ("1 qid:1 3:x", "feature value 'x'", True),
    ("1 qid:1 3:1e", "feature value '1e'", True),
    ("1 qid:1 3:0x10", "feature value '0x10'", True),
    ("1 qid:1 a:3", "feature index 'a'", True),
    ("1 qid:1 2.5:3", "feature index '2.5'", True),
    ("1 qid:1 3:1 3:2", "not larger than the previous index 3", True),
    ("1 qid:1 4:1 3:2", "not larger than the previous index 4", True),
    ("1 qid:1 -1:2", "invalid feature index -1", True),
    ("1 qid:x 1:2", "bad query id 'qid:x'", True),
    ("1 qid:1.5 1:2", "bad query id 'qid:1.5'", True),
    ("1 qid: 1:2", "bad query id 'qid:'", True),
    ("1 qid:99999999999999999999 1:2", "bad query id", True),
    ("1 1:2 qid:3", "qid must come right after the label", True),
    ("1 qid:1 0:1", "invalid feature index 0", True),          # with zero_based=False
    ("1 1:2", "lines with and without qid are mixed (line 1", False),
]


@pytest.mark.parametrize("line, message, sklearn_refuses", MALFORMED)
def test_malformed_lines_name_the_line(tmp_path, line, message, sklearn_refuses):
    path = tmp_path / "bad.svm"
    path.write_text(GOOD + line + "\n1 qid:2 1:1\n")
    kw = {"zero_based": False} if "0:1" in line else {}
    with pytest.raises(ValueError) as info:
        load_svmlight(path, engine="cyrank", **kw)
    text = str(info.value)
    assert "line 3:" in text and message in text and str(path) in text
    if sklearn_refuses:
        with pytest.raises((ValueError, OverflowError)):
            sk_load(path, **kw)


def test_line_numbers_count_blank_and_crlf_lines(tmp_path):
    path = tmp_path / "bad.svm"
    path.write_bytes(b"1 1:1\r\n\r\n   \n# c\n2 1:2\n\n\n3 2:1 2:5\n")
    with pytest.raises(ValueError, match="line 8:"):
        load_svmlight(path)


# ------------------------------------------------------------------------------------------- dump/load
def exact_random(rng, shape, density):
    v = rng.standard_normal(shape) * 10.0 ** rng.integers(-300, 300, shape)
    v[rng.random(shape) > density] = 0.0
    return v


@pytest.mark.parametrize("with_qid", [True, False])
@pytest.mark.parametrize("zero_based", [False, True])
def test_dump_load_round_trip_dense(tmp_path, with_qid, zero_based):
    rng = np.random.default_rng(1)
    X = exact_random(rng, (50, 9), 0.6)
    X[:, 0] = np.where(X[:, 0] == 0, 1.5, X[:, 0])  # column 0 present so "auto" is unambiguous
    y = rng.standard_normal(50) * 1e5
    y[:10] = np.round(y[:10])
    qid = rng.integers(-5, 5, 50) if with_qid else None
    path = tmp_path / "rt.svm"
    dump_svmlight(X, y, path, qid=qid, zero_based=zero_based)
    text = path.read_text()
    assert ("qid:" in text) == with_qid
    X2, y2, q2 = load_svmlight(path, n_features=9, zero_based=zero_based)
    assert X2.toarray().tobytes() == X.tobytes()
    assert y2.tobytes() == y.tobytes()
    assert np.array_equal(q2, qid if with_qid else np.zeros(50, np.int64))
    # scikit-learn reads our files to the same arrays
    Xs, ys, qs = sk_load(path, n_features=9, zero_based=zero_based)
    assert Xs.toarray().tobytes() == X.tobytes() and ys.tobytes() == y.tobytes()


def test_dump_load_round_trip_sparse_float32_gz(tmp_path):
    rng = np.random.default_rng(2)
    X = sp.random(80, 30, density=0.2, format="csr", random_state=3, dtype=np.float64)
    X.data = exact_random(rng, X.data.shape, 1.0)
    X.data[::7] = 0.0  # explicit zeros are written and read back
    y = rng.integers(0, 5, 80).astype(float)
    qid = np.repeat(np.arange(8), 10)
    path = tmp_path / "rt.svm.gz"
    dump_svmlight(X, y, path, qid=qid)
    with gzip.open(path, "rb") as fh:
        assert fh.read().startswith(b"%d qid:0 " % y[0])
    X2, y2, q2 = load_svmlight(path, n_features=30, zero_based=False)
    assert np.array_equal(X2.indptr, X.indptr) and np.array_equal(X2.indices, X.indices)
    assert X2.data.tobytes() == X.data.tobytes() and np.array_equal(y2, y) and np.array_equal(q2, qid)
    X32 = sp.csr_matrix((rng.standard_normal(X.nnz).astype(np.float32), X.indices, X.indptr), shape=X.shape)
    dump_svmlight(X32, y, path, qid=qid)
    X3, _, _ = load_svmlight(path, n_features=30, dtype=np.float32)
    assert X3.dtype == np.float32 and X3.data.tobytes() == X32.data.tobytes()
    X4, _, _ = load_svmlight(path, n_features=30)
    assert X4.data.tobytes() == X32.data.astype(np.float64).tobytes()


def test_cython_and_python_writers_agree():
    rng = np.random.default_rng(4)
    X = sp.csr_matrix(exact_random(rng, (20, 6), 0.5))
    y = rng.standard_normal(20)
    y[:5] = [0.0, -0.0, 2.0, 1e16, 123456789.0]
    args = (X.data, X.indices.astype(np.int64), X.indptr.astype(np.int64), y, np.arange(20, dtype=np.int64) - 10)
    for has_qid in (True, False):
        for offset in (0, 1):
            fast = _svmlight.format_rows(*args, has_qid, offset, 0, 20)
            assert fast == cio._format_rows_py(*args, has_qid, offset, 0, 20)
    assert [line.split(b" ")[0] for line in fast.split(b"\n")[:5]] == [b"0", b"-0", b"2", b"1e+16", b"123456789"]


def test_dump_refuses_bad_input(tmp_path):
    with pytest.raises(ValueError, match="finite"):
        dump_svmlight(np.array([[np.nan]]), [1.0], tmp_path / "x.svm")
    with pytest.raises(ValueError, match="rows"):
        dump_svmlight(np.ones((3, 2)), [1.0, 2.0], tmp_path / "x.svm")


def test_cyrank_engine_is_faster_than_sklearn_on_a_medium_file(tmp_path):
    """Sanity check of the point of the reader (full benchmark: 1e5 x 100 file, see the report)."""
    import time

    rng = np.random.default_rng(5)
    X = np.round(rng.random((4000, 40)), 6)
    path = tmp_path / "m.svm"
    dump_svmlight(X, rng.integers(0, 5, 4000).astype(float), path, qid=np.repeat(np.arange(40), 100))
    t0 = time.perf_counter()
    ours = load_svmlight(path)
    t1 = time.perf_counter()
    ref = sk_load(path)
    t2 = time.perf_counter()
    assert_same_as_sklearn(ours, ref)
    assert (t1 - t0) < (t2 - t1)


# ---------------------------------------------------------------------------------------- model files
@register_model
class TinyRanker(BaseEstimator):
    """A small estimator with attributes of every supported kind."""

    def __init__(self, alpha=1.0, shape=(2, 3), kernel="linear", offsets=None, options=None):
        self.alpha = alpha
        self.shape = shape
        self.kernel = kernel
        self.offsets = offsets
        self.options = options

    def fit(self, X, y, qid=None):
        X, y, qid = check_ranking_data(X, y, qid)
        A = X.toarray() if sp.issparse(X) else X
        self.coef_ = np.linalg.solve(A.T @ A + self.alpha * np.eye(A.shape[1]), A.T @ y)
        self.intercept_ = np.float32(0.25)
        self.n_iter_ = 7
        self.converged_ = True
        self.objective_ = float(np.sum((A @ self.coef_ - y) ** 2))
        self.history_ = [3.0, 2.5, float("inf")]
        self.shape_ = (A.shape[0], A.shape[1])
        self.solver_ = "exact"
        self.gap_ = None
        self.levels_ = np.unique(y).astype(np.int32)
        self.support_ = sp.csr_matrix(np.eye(3))
        self.feature_names_in_ = np.array([f"f{i}" for i in range(A.shape[1])], dtype=object)
        self.info_ = {"status": "optimal", "tol": 1e-9}
        self._private = object()   # private: not saved
        return self

    def predict(self, X):
        return np.asarray(X @ self.coef_) + self.intercept_


class NotRegistered(TinyRanker):
    pass


def fitted(**params):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    return TinyRanker(**params).fit(X, rng.standard_normal(30)), X


def assert_same_value(a, b):
    assert type(a) is type(b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    elif sp.issparse(a):
        assert a.format == b.format and (a != b).nnz == 0
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, z in zip(a, b):
            assert_same_value(x, z)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            assert_same_value(a[k], b[k])
    elif isinstance(a, np.generic):
        assert a.dtype == b.dtype and a == b
    else:
        assert a == b


def test_model_round_trip(tmp_path):
    est, X = fitted(alpha=0.5, offsets=np.array([0.0, 1.0]), options={"a": [1, 2], "b": (None, "x")})
    path = tmp_path / "model.cyrank"          # no .npz appended
    save_model(est, path)
    assert path.exists() and not (tmp_path / "model.cyrank.npz").exists()
    est2 = load_model(path)
    assert type(est2) is TinyRanker
    assert np.array_equal(est2.predict(X), est.predict(X))
    p1, p2 = est.get_params(), est2.get_params()
    assert p1.keys() == p2.keys()
    for k in p1:
        assert_same_value(p1[k], p2[k])
    public = [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]
    assert sorted(public) == sorted(k for k in vars(est2) if k.endswith("_"))
    for k in public:
        assert_same_value(getattr(est, k), getattr(est2, k))
    assert not hasattr(est2, "_private")
    # unfitted estimators round-trip too
    save_model(TinyRanker(kernel="rbf"), path)
    assert load_model(path).get_params()["kernel"] == "rbf" and not hasattr(load_model(path), "coef_")


def test_model_file_needs_no_pickle(tmp_path, monkeypatch):
    est, X = fitted()
    path = tmp_path / "m.npz"
    save_model(est, path)
    with np.load(path, allow_pickle=False) as npz:
        header = json.loads(npz["cyrank_header"].tobytes())
        assert header["format"] == "cyrank-model" and header["class"] == "TinyRanker"
        assert header["attribute_kinds"]["coef_"] == "ndarray" and header["attribute_kinds"]["support_"] == "sparse"
        for key in npz.files:
            assert npz[key].dtype.kind != "O"
    with zipfile.ZipFile(path) as zf:
        assert all(n.endswith(".npy") for n in zf.namelist())

    def no_pickle(*a, **k):
        raise AssertionError("pickle was used")

    monkeypatch.setattr(pickle, "loads", no_pickle)
    monkeypatch.setattr(pickle, "load", no_pickle)
    monkeypatch.setattr(pickle, "Unpickler", no_pickle)
    assert np.array_equal(load_model(path).predict(X), est.predict(X))


def test_save_refuses_unsupported_values(tmp_path):
    est, _ = fitted()
    with pytest.raises(TypeError, match="not registered"):
        save_model(NotRegistered().fit(np.eye(3), np.ones(3)), tmp_path / "x.npz")
    for bad, match in [(object(), "attribute bad_ has type object"),
                       (np.array([1, "a", None], dtype=object), "object array"),
                       ([1, lambda: 0], r"bad_\[1\] has type function"),
                       (sp.coo_matrix(np.eye(2)), "sparse coo"),
                       ({1: 2}, "non-string key")]:
        est.bad_ = bad
        with pytest.raises(TypeError, match=match):
            save_model(est, tmp_path / "x.npz")
    with pytest.raises(TypeError, match="decorates a class"):
        register_model(est)


def test_load_refuses_bad_files(tmp_path, monkeypatch, edit_model_file):
    est, _ = fitted()
    good = tmp_path / "good.npz"
    save_model(est, good)
    raw = good.read_bytes()

    def check(name, content_or_edit, match):
        p = tmp_path / name
        if isinstance(content_or_edit, bytes):
            p.write_bytes(content_or_edit)
        else:
            p.write_bytes(raw)
            edit_model_file(p, None, *content_or_edit)
        with pytest.raises(ValueError, match=match):
            load_model(p)

    check("text.npz", b"1 qid:1 1:0.5\n", "not an .npz archive")
    check("empty.npz", b"", "not an .npz archive")
    buf = stdio.BytesIO()
    np.save(buf, np.arange(3))
    check("array.npy", buf.getvalue(), "not an .npz archive")
    check("truncated.npz", raw[: len(raw) // 2], "corrupt")
    check("garbled.npz", raw[:200] + bytes(len(raw) - 400) + raw[-200:], "corrupt")
    foreign = stdio.BytesIO()
    np.savez(foreign, weights=np.ones(3))
    check("foreign.npz", foreign.getvalue(), "not a cyrank model file")
    check("version.npz", (lambda h: h.update(format_version=2),), "newer cyrank")
    check("format.npz", (lambda h: h.update(format="other"),), "not a cyrank model file")
    check("class.npz", (lambda h: h.update({"class": "os.system"}),), "'os.system' is not registered")
    check("module.npz", (lambda h: h.update({"class": "Nope", "module": "cyrank.no_such_module"}),),
          "'Nope' is not registered")
    deep = 1
    for _ in range(40):
        deep = [deep]
    check("deep.npz", (lambda h: h["attributes"].append(["deep_", deep]),), "nested too deeply")
    check("attrname.npz", (lambda h: h["attributes"].append(["__class__", 1]),), "not a public fitted attribute")
    key = json.loads(np.load(good)["cyrank_header"].tobytes())["attributes"][0][1]["key"]
    check("pickled.npz", (None, lambda h, a: a.update({key: np.array([{"x": 1}], dtype=object)})), "pickle")
    check("dtype.npz", (None, lambda h, a: a.update({key: a[key].astype(np.float32)})), "corrupt")
    check("extra.npz", (None, lambda h, a: a.update(extra=np.ones(2))), "unexpected entries")
    # a class that is no longer registered
    monkeypatch.delitem(cio._THIRD_PARTY_MODELS, "TinyRanker")
    with pytest.raises(ValueError, match="'TinyRanker' is not registered"):
        load_model(good)


def test_register_model_rejects_name_clash():
    class TinyRanker(BaseEstimator):  # same name, different class
        pass

    with pytest.raises(ValueError, match="already registered"):
        register_model(TinyRanker)
    assert register_model(cio._THIRD_PARTY_MODELS["TinyRanker"]) is cio._THIRD_PARTY_MODELS["TinyRanker"]
