"""Issue 26 (second hostile audit), the Dask cause: rows that vanished from a fit."""
import warnings

import numpy as np
import pytest

from cyrank._validation import RankingDataWarning


# ------------------------------------------------------------------------------------------- Dask drops rows
def _dask_data():
    rng = np.random.RandomState(0)
    X = rng.randn(40, 3)
    y = rng.randint(0, 3, 40).astype(np.float64)
    qid = np.repeat(np.arange(4), 10).astype(np.float64)
    return X, y, qid


@pytest.mark.slow
def test_dask_drops_rows():
    """A NaN qid is refused (RankSVM refuses it too) instead of its row vanishing from the fit; X, y and qid of
    different lengths get a message naming the lengths instead of dask's "Chunks do not add up"; DaskRankNet
    warns once, on the driver, when no query has a pair (as every Dask estimator now does; DaskLabelRankBoost when
    no instance has a preference edge)."""
    da = pytest.importorskip("dask.array")
    distributed = pytest.importorskip("distributed")
    from cyrank.dask import DaskDominationRank, DaskLabelRankBoost, DaskRankNet, DaskRankSVM, query_partitions

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
        with warnings.catch_warnings(record=True) as caught:  # label ranking: no instance with a preference edge
            warnings.simplefilter("always")
            DaskLabelRankBoost(alpha=1.0).fit(da.from_array(X, chunks=(10, -1)),
                                              da.from_array(np.ones((40, 3), np.int8), chunks=(10, -1)),
                                              client=client)
        no_edges = [w for w in caught if issubclass(w.category, RankingDataWarning)]
        assert len(no_edges) == 1 and "preference edge" in str(no_edges[0].message), [str(w.message) for w in caught]
    finally:
        client.close()
