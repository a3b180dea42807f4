"""Hostile model and data files: every loaded model fits its class's schema or is refused with a ValueError,
no file names code to import, sizes are bounded before reading, and writes are atomic."""
import gzip
import json
import os
import sys
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cyrank import MLR, DominationRank, RankSVM
from cyrank import io as cio
from cyrank.datasets import make_ranking
from cyrank.io import dump_svmlight, load_model, load_svmlight, save_model

RNG = np.random.default_rng(0)  # other draws of the tests below
N, D = 60, 5
X, Y, QID = make_ranking(6, [10] * 6, D, density=0.6, random_state=0)
X_WIDE = sp.random(N, 400, density=0.02, format="csr", random_state=1)  # kept sparse in a kernel model


def _wine():
    from sklearn.datasets import load_wine

    Xw, yw = load_wine(return_X_y=True)
    return (Xw - Xw.mean(0)) / Xw.std(0), yw


MODELS = {
    "domination-cd-sampled": lambda: DominationRank(solver="cd", penalty="l1", alpha=0.1, neg_sample=0.5,
                                                    random_state=0).fit(X, Y, qid=QID),
    "domination-newton": lambda: DominationRank().fit(X, Y, qid=QID),
    "ranksvm-linear": lambda: RankSVM().fit(X, Y, qid=QID),
    "ranksvm-hinge": lambda: RankSVM(loss="hinge").fit(X, Y, qid=QID),
    "ranksvm-rbf-dense": lambda: RankSVM(kernel="rbf").fit(X, Y, qid=QID),
    "ranksvm-rbf-csr": lambda: RankSVM(kernel="rbf", kernel_memory_mb=0.1).fit(X_WIDE, Y, qid=QID),
    "ranksvm-poly-hinge": lambda: RankSVM(kernel="poly", degree=2, loss="hinge").fit(X, Y, qid=QID),
    "ranksvm-precomputed": lambda: RankSVM(kernel="precomputed").fit(X @ X.T, Y, qid=QID),
    "mlr-trace": lambda: MLR(C=1.0).fit(*_wine()),
    "mlr-diagonal-str": lambda: MLR(C=1.0, regularizer="diagonal").fit(_wine()[0], _wine()[1].astype(str)),
}


def _inputs(name):
    if name.startswith("mlr"):
        return _wine()[0]
    return {"ranksvm-precomputed": X @ X.T, "ranksvm-rbf-csr": X_WIDE}.get(name, X)


def _out(model, Z):
    return model.transform(Z) if isinstance(model, MLR) else model.predict(Z)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Each model fitted once, saved, and its outputs on its inputs."""
    root = tmp_path_factory.mktemp("models")
    out = {}
    for name, make in MODELS.items():
        model = make()
        path = root / f"{name}.npz"
        save_model(model, path)
        out[name] = (path, _out(model, _inputs(name)))
    return out


@pytest.mark.parametrize("name", MODELS)
def test_every_variant_round_trips(saved, name):
    """The schemas admit every model the estimators produce (an attribute added to fit but not to the schema
    fails here)."""
    path, want = saved[name]
    assert np.array_equal(_out(load_model(path), _inputs(name)), want)


def _attr(header, name):
    return next(node for attr, node in header["attributes"] if attr == name)


def _set_attr(header, name, node):
    header["attributes"] = [[a, node if a == name else n] for a, n in header["attributes"]]


def _set_param(header, name, value):
    header["params"]["items"] = [[k, value if k == name else v] for k, v in header["params"]["items"]]


def _drop(name):
    def edit(header, arrays):
        del arrays[_attr(header, name)["key"]]
        header["attributes"] = [p for p in header["attributes"] if p[0] != name]
    return edit


def _sparse_index(value):
    def edit(header, arrays):
        key = _attr(header, "support_vectors_")["indices"]["key"]
        arrays[key] = arrays[key].copy()
        arrays[key][3] = value
    return edit


def _array(name, change):
    def edit(header, arrays):
        key = _attr(header, name)["key"]
        arrays[key] = change(arrays[key])
        _attr(header, name).update(dtype=arrays[key].dtype.str, shape=list(arrays[key].shape))
    return edit


CRAFTED = [
    ("ranksvm-rbf-csr", (None, _sparse_index(10**8)), "out of range for 400 columns"),
    ("ranksvm-rbf-csr", (None, _sparse_index(-3 * 10**6)), "is negative"),
    ("ranksvm-rbf-csr", (None, _sparse_index(400)), "out of range for 400 columns"),
    ("ranksvm-linear", (None, _array("coef_", lambda a: a[:-1])), r"coef_ has shape \(4,\)"),
    ("ranksvm-linear", (None, _array("coef_", lambda a: a.astype(np.int64))), "coef_ has dtype int64"),
    ("ranksvm-linear", (None, _array("coef_", lambda a: np.r_[a[:-1], np.nan])), "coef_ holds NaN"),
    ("ranksvm-linear", (lambda h: _set_attr(h, "n_features_in_", "5"),), "n_features_in_ = '5' is not an int"),
    ("domination-newton", (lambda h: _set_param(h, "alpha", -1),), "invalid parameter: alpha must be >= 0"),
    ("ranksvm-linear", (lambda h: h["attributes"].append(["fit_", 1]),), r"unknown attribute\(s\) fit_"),
    ("ranksvm-linear", (lambda h: h["attributes"].append(["decision_function_", 1.0]),),
     r"unknown attribute\(s\) decision_function_"),
    ("ranksvm-linear", (None, _drop("coef_")), r"missing attribute\(s\) coef_"),
    ("ranksvm-rbf-dense", (None, _array("beta_", lambda a: a[:-2])), "axis 0 .m. should be"),
    ("ranksvm-rbf-dense", (None, _array("support_vectors_", lambda a: a[:, :-1])), "axis 1 .d. should be 5"),
    ("ranksvm-precomputed", (None, _array("support_", lambda a: a + N)), r"support_ must lie in \[0, d\)"),
    ("ranksvm-linear", (lambda h: _set_param(h, "kernel", "rbf"),), r"unknown attribute\(s\) coef_"),
    ("mlr-trace", (None, _array("W_", lambda a: a[:-1, :-1])), "W_ has shape"),
]


@pytest.mark.parametrize("name, edit, message", CRAFTED)
def test_crafted_model_files_refused(saved, tmp_path, name, edit, message, edit_model_file):
    bad = tmp_path / "bad.npz"
    edit_model_file(saved[name][0], bad, *edit)
    with pytest.raises(ValueError, match=message):
        load_model(bad)


def test_module_named_in_a_file_is_never_imported(saved, tmp_path, edit_model_file):
    """A header naming module cyrank.__main__ used to import it, running the command line inside the host."""
    sys.modules.pop("cyrank.__main__", None)
    for cls, module in [("Nope", "cyrank.__main__"), ("RankSVM", "cyrank.__main__")]:
        path = tmp_path / f"{cls}.npz"
        edit_model_file(saved["ranksvm-linear"][0], path, lambda h: h.update({"class": cls, "module": module}))
        if cls == "Nope":
            with pytest.raises(ValueError, match="'Nope' is not registered"):
                load_model(path)
        else:
            assert np.array_equal(load_model(path).predict(X), saved["ranksvm-linear"][1])
    assert "cyrank.__main__" not in sys.modules


MUTATIONS = ["drop", "extra", "none", "string", "nan", "shrink", "grow", "retype", "negate"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(st.sampled_from(["ranksvm-rbf-csr", "ranksvm-linear", "domination-cd-sampled", "mlr-trace"]),
       st.data())
def test_random_schema_violations(saved, tmp_path, edit_model_file, name, data):
    """Any single change to any attribute: the file is refused with a ValueError, or it loads and computes the
    same outputs as the original (a change that keeps the model valid and equal)."""
    src, want = saved[name]
    with np.load(src) as npz:
        header = json.loads(npz["cyrank_header"].tobytes())
    attr = data.draw(st.sampled_from([a for a, _ in header["attributes"]]))
    how = data.draw(st.sampled_from(MUTATIONS))
    spec = cio._schema_rules(type(load_model(src)), load_model(src).get_params())[attr].string
    # a free dimension ("*") may change length, and a float's sign is its value: such changes make another
    # valid model, so they are not violations
    assume(not (how in ("shrink", "grow") and "*" in spec) and not (how == "negate" and spec.startswith("float")))

    def mutate(h, arrays):
        node = _attr(h, attr)
        if how == "drop":
            h["attributes"] = [p for p in h["attributes"] if p[0] != attr]
        elif how == "extra":
            h["attributes"].append([attr.rstrip("_") + "x_", 1])
        elif how in ("none", "string"):
            _set_attr(h, attr, None if how == "none" else "x")
        elif isinstance(node, dict) and node.get("__cyrank__") == "ndarray" and arrays[node["key"]].size:
            a = arrays[node["key"]]
            a = {"nan": lambda: np.where(np.arange(a.size).reshape(a.shape) == 0, np.nan, a) if a.dtype.kind == "f"
                 else a.astype(np.float64),
                 "shrink": lambda: a[:-1], "grow": lambda: np.concatenate([a, a[:1]]),
                 "retype": lambda: a.astype(np.float32 if a.dtype.kind == "f" else np.float64),
                 "negate": lambda: -a if a.dtype.kind != "b" else ~a}[how]()
            arrays[node["key"]] = a
            node.update(dtype=a.dtype.str, shape=list(a.shape))
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            _set_attr(h, attr, -node - 1)

    path = tmp_path / "mutated.npz"
    edit_model_file(src, path, None, mutate)
    try:
        model = load_model(path)
    except ValueError:
        return
    assert np.array_equal(_out(model, _inputs(name)), want)


def test_declared_sizes_bounded_before_reading(tmp_path, monkeypatch):
    """A small file declaring a large member (deflated zeros: a decompression bomb) is refused before any array
    is read; max_bytes admits a genuine larger model."""
    import tracemalloc

    model = RankSVM().fit(X, Y, qid=QID)
    path = tmp_path / "bomb.npz"
    save_model(model, path)
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a99.npy", np.zeros(4 << 20, dtype=np.uint8).tobytes())  # 4 MB declared, ~4 KB stored
    monkeypatch.setattr(cio, "MODEL_SIZE_MIN", 1 << 20)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"declares 4\.0 MB of arrays, more than the limit"):
            load_model(path)
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()
    with pytest.raises(ValueError, match="unexpected entries"):  # within the bound: read, then refused
        load_model(path, max_bytes=8 << 20)


def test_writes_are_atomic(tmp_path, monkeypatch):
    """A failure or Ctrl-C mid-write leaves the previous file intact and no temporary file behind."""
    good = RankSVM().fit(X, Y, qid=QID)
    path = tmp_path / "model.npz"
    save_model(good, path)
    before = path.read_bytes()

    def interrupted_savez(fh, **arrays):
        fh.write(b"PK\x03\x04 partial")
        raise KeyboardInterrupt

    monkeypatch.setattr(np, "savez", interrupted_savez)
    with pytest.raises(KeyboardInterrupt):
        save_model(good, path)
    monkeypatch.undo()
    assert path.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["model.npz"]

    rows = 10_000
    Xd, yd = RNG.normal(size=(rows, 3)), RNG.integers(0, 3, rows).astype(float)
    for name in ("data.svm", "data.svm.gz"):
        data = tmp_path / name
        dump_svmlight(Xd[:10], yd[:10], data)
        old = data.read_bytes()
        calls = []
        real = cio._cython_reader().format_rows

        def failing(*args):
            calls.append(1)
            if len(calls) > 1:
                raise OSError(28, "No space left on device")
            return real(*args)

        monkeypatch.setattr(cio._cython_reader(), "format_rows", failing)
        with pytest.raises(OSError, match="No space left"):
            dump_svmlight(Xd, yd, data)
        monkeypatch.undo()
        assert data.read_bytes() == old
    assert sorted(os.listdir(tmp_path)) == ["data.svm", "data.svm.gz", "model.npz"]


def test_write_errors_name_the_directory(tmp_path):
    model = RankSVM().fit(X, Y, qid=QID)
    with pytest.raises(OSError, match=f"the directory {tmp_path / 'missing'} does not exist"):
        save_model(model, tmp_path / "missing" / "m.npz")
    if os.geteuid() != 0:  # root writes into read-only directories
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o500)
        try:
            with pytest.raises(OSError, match=f"the directory {locked} is not writable"):
                save_model(model, locked / "m.npz")
        finally:
            locked.chmod(0o700)


def test_compressed_data_expansion_is_bounded(tmp_path, monkeypatch):
    bomb = tmp_path / "bomb.svm.gz"
    bomb.write_bytes(gzip.compress(b"\n" * (4 << 20)))  # 4 MB of newlines in a few KB
    monkeypatch.setattr(cio, "DECOMPRESS_MIN", 1 << 20)
    with pytest.raises(ValueError, match="expands to more than 1 MB .* decompression bomb"):
        load_svmlight(bomb)
    with pytest.raises(ValueError, match="expands to more than 0 MB"):
        load_svmlight(bomb, max_bytes=1000)
    # genuine data: two gzip members (as `cat a.gz b.gz`) read as their concatenation; a truncated stream refused
    two = tmp_path / "two.svm.gz"
    two.write_bytes(gzip.compress(b"1 qid:1 1:0.5\n") + gzip.compress(b"0 qid:1 2:0.25\n"))
    Xt, yt, qt = load_svmlight(two)
    assert Xt.shape == (2, 2) and np.array_equal(yt, [1.0, 0.0])
    cut = tmp_path / "cut.svm.gz"
    cut.write_bytes(gzip.compress(b"1 qid:1 1:0.5\n" * 1000)[:-20])
    with pytest.raises(ValueError, match="could not decompress"):
        load_svmlight(cut)


def test_feature_index_beyond_budget_names_index_and_line(tmp_path):
    """A feature index 2**40 used to make fit allocate 8 TiB."""
    path = tmp_path / "big.svm"
    path.write_text("# comment\n\n1 qid:1 1:0.5\n0 qid:1 2:0.3 1099511627776:1\n")
    with pytest.raises(ValueError, match=r"line 4: feature index 1099511627775 implies 1099511627776 features, "
                                         r"more than max_features=268435456"):
        load_svmlight(path)
    small = tmp_path / "small.svm"
    small.write_text("1 qid:1 1:0.5 1000:1\n0 qid:1 2:0.3\n")
    for engine in ("cyrank", "sklearn"):
        with pytest.raises(ValueError, match="line 1: feature index 999"):
            load_svmlight(small, max_features=100, engine=engine)
    assert load_svmlight(small, max_features=100, n_features=2000)[0].shape == (2, 2000)


def test_feature_beyond_names_the_line_of_a_loaded_file(tmp_path):
    """cyrank.io.feature_beyond (the command line's per-value bound) finds the first index past a limit in a file
    already loaded, counting comment and blank lines, compressed or not."""
    import gzip as gz

    from cyrank.io import feature_beyond

    text = "# head\n1 qid:1 1:0.5\n\n0 qid:1 2:0.3 # x\n1 qid:2 3:1 70:2\n0 qid:2 90:1\n"
    path = tmp_path / "f.svm"
    path.write_text(text)
    X = load_svmlight(path)[0]
    assert feature_beyond(path, X, 60) == (str(path), 5, 69)
    assert feature_beyond(path, X, 70) == (str(path), 6, 89)
    assert feature_beyond(path, X, 1) == (str(path), 4, 1)
    assert feature_beyond(path, X, 90) is None
    packed = tmp_path / "f.svm.gz"
    packed.write_bytes(gz.compress(text.encode()))
    assert feature_beyond(packed, load_svmlight(packed)[0], 60) == (str(packed), 5, 69)
