"""Issue 26, LambdaMART: corrupted model files, LightGBM's raw errors, defaults on small sets, random_state, memory
of a huge declared feature count, verbose. Crash-prone reproducers run in a child process, so that a regression
fails the test instead of killing pytest."""
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp

lgb = pytest.importorskip("lightgbm")

from cyrank import LambdaMART  # noqa: E402
from cyrank.io import load_model, save_model  # noqa: E402


def small_set(n_queries=3, per_query=10, d=4, seed=0):
    rng = np.random.default_rng(seed)
    n = n_queries * per_query
    X = rng.normal(size=(n, d))
    y = rng.integers(0, 3, n).astype(float)
    return X, y, np.repeat(np.arange(n_queries), per_query)


@pytest.fixture(scope="module")
def fitted():
    X, y, qid = small_set(3, 30, 5)
    return LambdaMART(n_estimators=3, num_leaves=4, min_child_samples=3, n_jobs=1).fit(X, y, qid), X


def _retree(text, t, edit):
    """``text`` with tree ``t``'s block changed by ``edit`` and tree_sizes updated to match: a tamperer who
    knows the format, so that the checks of the tree's own lines are reached."""
    start = text.index(f"Tree={t}\n")
    sizes = [int(s) for s in re.search(r"tree_sizes=([\d ]+)", text).group(1).split()]
    block = text[start:start + sizes[t]]
    new = edit(block)
    assert new != block
    sizes[t] = len(new)
    text = text[:start] + new + text[start + len(block):]
    return re.sub(r"tree_sizes=[\d ]+", "tree_sizes=" + " ".join(map(str, sizes)), text, count=1)


# Tampered model texts: name -> function of the saved text. The first group leaves tree_sizes stale, as a hand
# edit does (LightGBM 4.7 then aborts, segfaults or loops forever: measured); the second fixes it.
RAW_TAMPERS = {
    "truncated": lambda s: s[: len(s) // 2],
    "truncated_in_a_tree": lambda s: s[: s.index("Tree=1") + 50],
    "tree_length": lambda s: s.replace("Tree=1\nnum_leaves=4", "Tree=1\nnum_leaves=9", 1),
    "split_feature": lambda s: re.sub(r"split_feature=\d+", "split_feature=999999", s, count=1),
    "child_cycle": lambda s: re.sub(r"left_child=-?\d+", "left_child=0", s, count=1),
    "tree_sizes": lambda s: re.sub(r"tree_sizes=(\d+)", lambda m: f"tree_sizes={int(m.group(1)) + 40}", s, count=1),
    "line_without_equals": lambda s: s.replace("is_linear=0", "is_linear0", 1),
}
FIXED_TAMPERS = {
    "decision_type": lambda s: _retree(s, 0, lambda b: re.sub(r"decision_type=\d+", "decision_type=1", b)),
    "split_feature_fixed": lambda s: _retree(s, 1, lambda b: re.sub(r"split_feature=\d+", "split_feature=5", b)),
    "short_leaf_value": lambda s: _retree(s, 2, lambda b: re.sub(r"(leaf_value=\S+) \S+", r"\1", b)),
    "leaf_out_of_range": lambda s: _retree(s, 0, lambda b: re.sub(r"right_child=-?\d+", "right_child=-7", b)),
    "nan_threshold": lambda s: _retree(s, 0, lambda b: re.sub(r"threshold=\S+", "threshold=nan", b)),
    "huge_num_leaves": lambda s: _retree(s, 0, lambda b: b.replace("num_leaves=4", "num_leaves=1000000")),
    "extra_line": lambda s: _retree(s, 0, lambda b: b.replace("is_linear=0\n", "is_linear=0\nnum_cat=3\n")),
    "categorical": lambda s: _retree(s, 0, lambda b: b.replace("num_cat=0", "num_cat=1")),
}

CHILD = textwrap.dedent("""
    import re, sys, warnings
    warnings.simplefilter("ignore")
    import numpy as np
    from cyrank import LambdaMART
    from cyrank.io import load_model, save_model
    sys.path.insert(0, {tests!r})
    from test_lambdamart_inputs import RAW_TAMPERS, FIXED_TAMPERS, small_set
    X, y, qid = small_set(3, 30, 5)
    m = LambdaMART(n_estimators=3, num_leaves=4, min_child_samples=3, n_jobs=1).fit(X, y, qid)
    for name, tamper in {{**RAW_TAMPERS, **FIXED_TAMPERS}}.items():
        path = {tmp!r} + "/" + name + ".npz"
        text = m.model_string_
        m.model_string_ = tamper(text)
        save_model(m, path)
        m.model_string_ = text
        try:
            load_model(path).predict(X)
            print(name, "ACCEPTED", flush=True)
        except ValueError as exc:
            print(name, "refused:", str(exc).replace("\\n", " "), flush=True)
""")


@pytest.mark.slow
def test_a_corrupted_lambdamart_model_file_is_refused_not_a_crash(tmp_path):
    """save_model, tamper with model_string_, save again: load_model refuses each file with a ValueError naming
    the file, model_string_ and the fix; LightGBM never parses the text (run in a child process: LightGBM 4.7 died
    with SIGABRT or SIGSEGV, or looped forever, on the raw tampers)."""
    script = CHILD.format(tests=str(__import__("pathlib").Path(__file__).parent), tmp=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)  # not the repository root, whose cyrank/ is the uncompiled source
    assert out.returncode == 0, f"the child died (signal {-out.returncode}): {out.stdout[-2000:]} {out.stderr[-2000:]}"
    lines = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    assert set(lines) == set(RAW_TAMPERS) | set(FIXED_TAMPERS)
    for name, message in lines.items():
        assert message.startswith("refused:"), (name, message)
        assert "not a valid LambdaMART model file" in message and "model_string_" in message, (name, message)
        assert "re-save the model" in message, (name, message)
    assert "decision_type 1" in lines["decision_type"]
    assert "split_feature 5 is not a feature index in [0, 5)" in lines["split_feature_fixed"]
    assert "truncated" in lines["truncated"]


def test_tampered_attributes_and_foreign_model_strings_are_refused(fitted, tmp_path):
    """best_iteration_ beyond the trees, n_iter_ or n_features_in_ changed, garbage text, the model string of a
    model on other features: each a ValueError at load_model (and at predict for an estimator changed in
    memory), never LightGBM's error."""
    m, X = fitted
    other = LambdaMART(n_estimators=3, min_child_samples=3, n_jobs=1).fit(*small_set(3, 30, 7))
    cases = {"best_iteration_": (9, "best_iteration_ = 9 is not a round in \\[1, n_iter_ = 3\\]"),
             "n_iter_": (4, "tree_sizes \\(one per tree\\) has 3 values, 4 expected"),
             "n_features_in_": (9, "max_feature_idx=4 where LambdaMART's model of 9 feature\\(s\\) has"),
             "model_string_": ("garbage", "no trees"),
             "features_used_": (np.array([0, 3]), "max_feature_idx=4 where .* of 2 feature")}
    cases["model_string_ of another model"] = (other.model_string_, "max_feature_idx=6")
    for key, (value, match) in cases.items():
        attr = key.split()[0]
        saved = getattr(m, attr, None)
        setattr(m, attr, value)
        try:
            save_model(m, tmp_path / "t.npz")
            with pytest.raises(ValueError, match=f"t.npz: not a valid LambdaMART model file .*{match}.*re-save"):
                load_model(tmp_path / "t.npz")
        finally:
            setattr(m, attr, saved)
    broken = load_model(save_model(m, tmp_path / "m.npz") or tmp_path / "m.npz")
    broken.model_string_ = other.model_string_
    with pytest.raises(ValueError, match="model_string_ .*max_feature_idx=6.*re-save"):
        broken.predict(X)


def test_raw_lightgbm_errors_become_clear_value_errors():
    """num_leaves=1e6, min_child_samples >= n, a 2-row fit: a ValueError naming the parameter and its range (or
    a fit), not LightGBMError."""
    X, y, qid = small_set()
    with pytest.raises(ValueError, match=r"num_leaves must be in \[2, 131072\] \(LightGBM's limit\)"):
        LambdaMART(num_leaves=10**6).fit(X, y, qid)
    with pytest.raises(ValueError, match=r"min_child_samples=30 forbids every split on 30 training rows.*at most 15"):
        LambdaMART(min_child_samples=30).fit(X, y, qid)
    with pytest.raises(ValueError, match=r"n_estimators must be in \[1, 2\*\*31 - 1\]"):
        LambdaMART(n_estimators=2**40).fit(X, y, qid)
    two = LambdaMART(n_estimators=2, n_jobs=1).fit(X[:2], [0.0, 1.0], [0, 0])
    assert two.min_child_samples_ == 1 and two.predict(X[:2])[1] > two.predict(X[:2])[0]
    with pytest.raises(ValueError, match="min_child_samples=2 forbids every split on 2 training rows"):
        LambdaMART(min_child_samples=2).fit(X[:2], [0.0, 1.0], [0, 0])


def test_lambdamart_at_its_defaults_trains_on_a_small_set():
    """30 rows, LambdaMART(): min_child_samples="auto" is min(20, n // 10) = 3, so the trees split (LightGBM's 20
    raised LightGBMError). A constant X is a ValueError; trees that cannot split give a RankingDataWarning."""
    X, y, qid = small_set()
    m = LambdaMART(n_jobs=1).fit(X, y, qid)
    assert m.min_child_samples_ == 3 and m.n_iter_ == 100
    assert np.unique(m.predict(X)).size > 3
    big = np.tile(X, (10, 1))
    assert LambdaMART(n_estimators=1, n_jobs=1).fit(big, np.tile(y, 10), np.repeat(np.arange(30), 10)) \
        .min_child_samples_ == 20
    with pytest.raises(ValueError, match="every column of X is constant"):  # before: LightGBM's num_features()
        LambdaMART().fit(np.zeros((30, 2)), y, qid)
    rare = np.zeros((30, 1))
    rare[:2] = 1.0  # a split would leave 2 rows on one side
    from cyrank._validation import RankingDataWarning
    with pytest.warns(RankingDataWarning, match="no split"):
        flat = LambdaMART(n_estimators=5, min_child_samples=5, n_jobs=1).fit(rare, y, qid)
    assert flat.n_iter_ == 1 and np.all(flat.predict(rare) == 0.0)


@pytest.mark.parametrize("bad", [1.5, "a", True, -1, 2**31])
def test_lambdamart_random_state_1_5_is_refused(bad):
    X, y, qid = small_set()
    with pytest.raises(ValueError, match=r"random_state must be None, an int in \[0, .*got"):
        LambdaMART(random_state=bad, n_estimators=2).fit(X, y, qid)


def test_lambdamart_random_state_may_be_a_randomstate():
    X, y, qid = small_set(3, 30)
    rs = np.random.RandomState(0)
    a = LambdaMART(random_state=rs, colsample_bytree=0.5, n_estimators=5, n_jobs=1).fit(X, y, qid)
    b = LambdaMART(random_state=np.random.RandomState(0), colsample_bytree=0.5, n_estimators=5, n_jobs=1) \
        .fit(X, y, qid)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


MEMORY_CHILD = textwrap.dedent("""
    import resource, warnings
    resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
    warnings.simplefilter("ignore")
    import numpy as np, scipy.sparse as sp
    from cyrank import LambdaMART
    d = 2**26
    rows = np.repeat(np.arange(6), 2)
    cols = np.array([0, 5, 1, 5, 2, d - 1, 0, 3, 1, 4, 2, d - 1])
    X = sp.csr_matrix((np.arange(1.0, 13.0), (rows, cols)), shape=(6, d))
    y, qid = np.array([0, 1, 2, 0, 1, 2.0]), np.array([0, 0, 0, 1, 1, 1])
    m = LambdaMART(n_estimators=3).fit(X, y, qid)
    s = m.predict(X)
    assert s[2] > s[0] and m.features_used_.tolist() == [0, 1, 2, 3, 4, 5, d - 1], m.features_used_
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
""")


@pytest.mark.slow
def test_the_declared_feature_count_does_not_drive_lightgbm_memory(tmp_path):
    """A sparse X of 2**26 columns and 6 rows: LightGBM gets only the 7 columns with a stored value. The child
    runs under a 3 GiB address-space limit (the old code died there with std::bad_alloc; without the limit it
    reached 14 GB) and must stay below 1 GiB resident."""
    env = {**__import__("os").environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", MEMORY_CHILD], capture_output=True, text=True, timeout=300, env=env,
                         cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    assert int(out.stdout.split()[-1]) < 1 << 20  # ru_maxrss in KiB: below 1 GiB


def test_sparse_columns_without_values_are_left_out_with_the_same_model():
    """Columns with no stored value carry no split: the trees are the same, only renumbered (features_used_), and
    predictions agree on the same data as CSR, CSC and dense; the map survives save_model/load_model."""
    X, y, qid = small_set(4, 25, 6)
    X[:, [1, 4]] = 0.0
    wide = sp.hstack([sp.csr_matrix(X), sp.csr_matrix((X.shape[0], 50))]).tocsr()
    wide.eliminate_zeros()
    m = LambdaMART(n_estimators=10, n_jobs=1).fit(wide, y, qid)
    dense = LambdaMART(n_estimators=10, n_jobs=1).fit(X, y, qid)
    assert m.features_used_.tolist() == [0, 2, 3, 5] and dense.features_used_ is None
    np.testing.assert_allclose(m.predict(wide), dense.predict(X), rtol=1e-12)
    np.testing.assert_allclose(m.predict(wide.tocsc()), m.predict(wide.toarray()), rtol=1e-12)


def test_fit_lambdamart_verbose_prints_every_k_rounds_with_the_time(capsys):
    """verbose=k: a line every k rounds and at the last, with the seconds since the fit began and every metric of
    every eval set, the values of evals_result_; without eval_set, the round and the time (before issue 30: a line
    every round, the training metric always, no time)."""
    X, y, qid = small_set(3, 30)
    LambdaMART(n_estimators=4, verbose=1, n_jobs=1).fit(X, y, qid)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4 and all(re.fullmatch(r"LambdaMART round +\d+ +[\d.]+ s", ln) for ln in lines)
    m = LambdaMART(n_estimators=5, verbose=2, n_jobs=1).fit(X, y, qid, eval_set=[(X, y, qid),
                                                                                 (X[:30], y[:30], qid[:30])])
    lines = capsys.readouterr().out.strip().splitlines()
    found = [re.fullmatch(r"LambdaMART round +(\d+) +[\d.]+ s  training ndcg@10 ([\d.]+)  valid_1 ndcg@10 ([\d.]+)",
                          ln) for ln in lines]
    assert all(found) and [int(f.group(1)) for f in found] == [2, 4, 5]
    for f in found:
        r = int(f.group(1)) - 1
        assert float(f.group(2)) == pytest.approx(m.evals_result_["training"]["ndcg@10"][r], abs=1e-6)
        assert float(f.group(3)) == pytest.approx(m.evals_result_["valid_1"]["ndcg@10"][r], abs=1e-6)
    LambdaMART(n_estimators=3, n_jobs=1).fit(X, y, qid)
    assert capsys.readouterr().out == ""


def test_err_eval_set_above_the_training_labels_is_refused_before_training(monkeypatch):
    """An ERR eval_set with a label above the training labels was found only when the first round was scored,
    after LightGBM had started; now it is refused before any tree is grown."""
    rng = np.random.default_rng(3)
    X, y, qid = rng.normal(size=(60, 3)), rng.integers(0, 3, 60).astype(float), np.repeat(np.arange(6), 10)
    yv = y.copy()
    yv[0] = 5.0
    monkeypatch.setattr(lgb, "train", lambda *a, **k: pytest.fail("LightGBM was reached"))
    with pytest.raises(ValueError, match="eval_set has label 5"):
        LambdaMART(metric="err@5", n_estimators=2).fit(X, y, qid, eval_set=(X, yv, qid))
