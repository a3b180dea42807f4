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
