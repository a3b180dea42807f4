"""Issue 26 (second hostile audit), the Dask, label-ranking and DominationRank-CD causes: one test per cause."""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from cyrank import DominationRank
from cyrank._validation import RankingDataWarning
from cyrank.labelrank import LabelRankBoost, PreferenceGraphs


# ------------------------------------------------------------------------------------------- Dask drops rows
def _dask_data():
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    y = rng.randint(0, 3, 40).astype(np.float64)
    qid = np.repeat(np.arange(4), 10).astype(np.float64)
    return X, y, qid


def test_dask_drops_rows():
    """A NaN qid is refused (RankSVM refuses it too) instead of its row vanishing from the fit; X, y and qid of
    different lengths get a message naming the lengths instead of dask's "Chunks do not add up"; DaskRankNet
    warns once, on the driver, when no query has a pair (as every Dask estimator now does)."""
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    from cyrank.dask import DaskDominationRank, DaskRankNet, DaskRankSVM, query_partitions

    X, y, qid = _dask_data()
    qid[25] = np.nan
    with pytest.raises(ValueError, match=r"qid contains NaN.*row 25.*drop or fill"):
        query_partitions(da.from_array(X, chunks=(10, -1)), da.from_array(y, chunks=10), da.from_array(qid, chunks=10))
    X, y, qid = _dask_data()
    with pytest.raises(ValueError, match=r"X has 40 rows .* y has 39 .*one y and one qid per row of X"):
        query_partitions(da.from_array(X, chunks=(10, -1)), da.from_array(y[:-1], chunks=10),
                         da.from_array(qid, chunks=10))
    with pytest.raises(ValueError, match=r"unknown chunk sizes.*compute_chunk_sizes"):
        Xd = da.from_array(X, chunks=(10, -1))
        keep = da.from_array(y, chunks=10) >= 0
        query_partitions(Xd[keep], da.from_array(y, chunks=10)[keep], da.from_array(qid, chunks=10)[keep])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None)
    try:
        args = (da.from_array(X, chunks=(10, -1)), da.from_array(np.zeros(40), chunks=10),
                da.from_array(qid, chunks=10))
        for cls in (DaskRankNet, DaskRankSVM, DaskDominationRank):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                cls().fit(*args, client=client)
            no_pairs = [w for w in caught if issubclass(w.category, RankingDataWarning)]
            assert len(no_pairs) == 1, (cls.__name__, [str(w.message) for w in caught])
    finally:
        client.close()


# ------------------------------------------------------------------------------------------- label ranking
def test_labelrankboost_boost_with_alpha_0_and_no_minimiser_reports_converged():
    """Separable preferences at alpha = 0: the loss has no minimiser, so neither solver may report convergence;
    the ConvergenceWarning says to set alpha > 0. With alpha > 0 (or overlapping classes) both still converge."""
    rng = np.random.RandomState(0)
    X = rng.randn(30, 2)
    y = (X[:, 0] > 0).astype(int)
    for solver in ("boost", "newton"):
        with pytest.warns(ConvergenceWarning, match=r"no minimiser.*alpha > 0"):
            model = LabelRankBoost(solver=solver, alpha=0.0).fit(X, y)
        assert not model.converged_
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConvergenceWarning)
            assert LabelRankBoost(solver=solver, alpha=0.1).fit(X, y).converged_
    y_noisy = (X[:, 0] + rng.randn(30) > 0).astype(int)  # overlapping classes: a finite minimiser at alpha = 0
    X1 = np.c_[X, np.ones(30)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        assert LabelRankBoost(solver="newton", alpha=0.0).fit(X1, y_noisy).converged_


def test_preferencegraphs_from_edges_wraps_label_ids_above_2_31_to_negative():
    """Label ids are int32 indices into n_labels-sized arrays: ids at or above 2**31 - 1 are refused with a message
    instead of wrapping to negative labels."""
    for n_labels in (None, 2**31 + 5):
        with pytest.raises(ValueError, match=r"(?i)2\*\*31 - 1|renumber the labels"):
            PreferenceGraphs.from_edges(np.array([0]), np.array([2**31 + 1]), np.array([0]), n_labels=n_labels)
    with pytest.raises(ValueError, match=r"exceeds 2147483647"):
        PreferenceGraphs(np.array([0, 1]), np.array([2**31 + 1]), np.array([0]), 2**32)
    G = PreferenceGraphs.from_edges(np.array([0, 1]), np.array([5, 1]), np.array([0, 0]))
    assert G.n_labels == 6 and G.init.min() >= 0


def test_reference_labelrank_passes_n_labels_none_to_callable_decompositions():
    """reference.labelrank calls a callable decomposition with the real n_labels, as cyrank does."""
    ref = pytest.importorskip("reference.labelrank")
    seen = []

    def each_edge(init, term, n_labels):
        seen.append(n_labels)
        return [np.array([e]) for e in range(len(init))]

    G = PreferenceGraphs.from_classes(np.array([0, 1, 2, 1]), 4)
    X = np.random.RandomState(0).randn(4, 2)
    coef = np.random.RandomState(1).randn(4, 2)
    ours = ref.objective(X, G, coef, decomposition=each_edge)
    assert seen and set(seen) == {4}
    from cyrank.labelrank import solver
    assert ours == pytest.approx(solver.objective(X, G, coef, decomposition=each_edge), rel=1e-12)


def test_labelrankboost_schema_gaps_in_saved_model_files(tmp_path):
    """A model file whose n_labels_ differs from coef_'s rows, whose classes_ has another length than coef_'s rows
    or is not sorted, or whose joint_coef_ is empty, is refused by load_model (ValueError), not at predict."""
    from cyrank.io import load_model, save_model

    rng = np.random.RandomState(0)
    X, y = rng.randn(30, 3), rng.randint(0, 3, 30)
    tampered = {"n_labels_": 5, "classes_": np.array([0, 1]), "joint_coef_": np.zeros(0)}
    tampered_order = {"classes_": np.array([2, 1, 0])}
    for name, value in [*tampered.items(), *tampered_order.items()]:
        model = LabelRankBoost(alpha=0.1).fit(X, y)
        setattr(model, name, value)
        path = tmp_path / f"{name}.npz"
        save_model(model, path)
        with pytest.raises(ValueError, match=r"not a valid LabelRankBoost model file"):
            load_model(path)
    save_model(LabelRankBoost(alpha=0.1).fit(X, y), tmp_path / "good.npz")
    assert load_model(tmp_path / "good.npz").n_labels_ == 3
    joint = rng.randn(30, 3, 2)
    model = LabelRankBoost(alpha=0.1).fit(X, y, joint=joint)
    with pytest.raises(ValueError, match=r"4 joint features per label.*fitted with 2"):
        model.predict(X, joint=rng.randn(30, 3, 4))


# ------------------------------------------------------------------------------------------- memory
def test_domination_cd_max_iter_1e11_preallocates_745_gib_of_history():
    """The CD history grows with the sweeps made: max_iter=10**11 on a tiny problem fits in a few kilobytes (it
    asked for 745 GiB up front, and max_iter did not fit the kernel's C int)."""
    import tracemalloc

    rng = np.random.RandomState(0)
    X, y, qid = rng.randn(40, 3), rng.randint(0, 3, 40).astype(np.float64), np.repeat(np.arange(4), 10)
    tracemalloc.start()
    try:
        model = DominationRank(solver="cd", max_iter=10**11).fit(X, y, qid)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert model.converged_ and peak < 16 << 20
    assert len(model.history_["objective"]) == len(model.history_["n_nonzero"]) == model.n_iter_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        long = DominationRank(solver="cd", max_iter=300, tol=1e-300).fit(X, y, qid)  # grown past 64, 128, 256
    assert long.n_iter_ == 300 and len(long.history_["objective"]) == 300
    assert np.all(np.diff(long.history_["objective"]) <= 1e-12 * abs(long.history_["objective"][0]))
    assert np.all(long.history_["n_nonzero"] == 3)


def test_multilabel_label_ids_are_unbounded():
    """A label id far above the number of labels that occur (a two-line multilabel file with label 1e9) is
    refused before anything of n_labels entries is allocated, with a message saying to renumber the labels;
    from_classes and from_edges refuse such inferred n_labels too."""
    import tracemalloc

    import scipy.sparse as sp

    Y = sp.csr_matrix((np.ones(2, np.int8), np.array([0, 10**9]), np.array([0, 1, 2])), shape=(2, 10**9 + 1))
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=r"label ids reach 1000000000, but only 2 distinct.*renumber"):
            LabelRankBoost().fit(np.eye(2), Y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20
    with pytest.raises(ValueError, match=r"label ids reach 100000000.*Renumber the labels"):
        PreferenceGraphs.from_classes(np.array([0, 10**8]))
    with pytest.raises(ValueError, match=r"label ids reach 100000000"):
        PreferenceGraphs.from_edges(np.array([0]), np.array([10**8]), np.array([0]))
    # a genuine label set larger than the labels seen stays accepted
    G = PreferenceGraphs.from_indicator(sp.csr_matrix((np.ones(2), np.array([0, 3]), np.array([0, 1, 2])),
                                                      shape=(2, 5000)))
    assert G.n_labels == 5000


@pytest.mark.parametrize("rows", [np.array([True, False]), np.array([5]), np.array([0.5]), "a"])
def test_g_mask_gives_numpy_index_errors(rows):
    """G[mask] with a wrong-length mask, an index out of range or a non-integer index said numpy's words only;
    now the IndexError names the number of instances and the three valid ways to select."""
    graphs = PreferenceGraphs.from_classes(np.array([0, 1, 2, 1]), n_labels=3)
    with pytest.raises(IndexError, match="belong to 4 instances; select them with a boolean mask of length 4"):
        graphs[rows]
    assert graphs[np.array([True, False, True, False])].n_instances == 2
