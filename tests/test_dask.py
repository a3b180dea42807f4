"""Distributed TRON on Dask (cyrank.dask): on a two-process LocalCluster, DaskRankSVM and DaskDominationRank reach
the single-machine coefficients and iteration counts with queries straddling chunk boundaries, survive a worker
killed in the middle of a fit, and give plain single-machine estimators."""
import pickle
import warnings

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from cyrank import DominationRank, RankNet, RankSVM  # noqa: E402
from cyrank.dask import DaskDominationRank, DaskRankNet, DaskRankSVM, query_partitions  # noqa: E402
from cyrank.datasets import make_ranking  # noqa: E402
from cyrank.io import load_model, save_model  # noqa: E402

pytestmark = pytest.mark.slow  # a two-process LocalCluster per module; each fit ships partitions


@pytest.fixture(scope="module")
def client():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # start-up chatter (ports, memory limits)
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None)
        c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def data(scattered, seed=0):
    """400 rows, 10 queries of various sizes: contiguous (LETOR files) or scattered over the rows."""
    return make_ranking(10, 400, 6, 3, binning="global", shuffle=scattered, random_state=seed)


def chunked(X, y, qid, rows=37):
    return da.from_array(X, chunks=(rows, -1)), da.from_array(y, chunks=rows), da.from_array(qid, chunks=rows)


@pytest.mark.parametrize("scattered", [False, True])
def test_partitions_keep_queries_whole(client, scattered):
    X, y, qid = data(scattered)
    parts, moved = query_partitions(*chunked(X, y, qid))
    blocks = [p.compute() for p in parts]
    seen = [set(np.unique(b[2]).tolist()) for b in blocks]
    assert all(not (a & b) for i, a in enumerate(seen) for b in seen[i + 1:])     # each query in one partition
    assert sum(b[2].size for b in blocks) == qid.size                            # every row once
    for Xp, yp, qp in blocks:
        for q in np.unique(qp):
            np.testing.assert_array_equal(np.sort(yp[qp == q]), np.sort(y[qid == q]))
    if not scattered:  # contiguous queries: only the rows of queries straddling a boundary move
        assert 0 < moved < 10 * 40


@pytest.mark.parametrize("scattered", [False, True])
@pytest.mark.parametrize("kind", ["ranksvm", "domination", "ranknet"])
def test_same_coefficients_and_iterations_as_one_machine(client, kind, scattered):
    X, y, qid = data(scattered, seed=1)
    if kind == "ranksvm":
        dist, local = DaskRankSVM(C=0.5, tol=1e-8), RankSVM(C=0.5, tol=1e-8)
    elif kind == "ranknet":
        dist, local = DaskRankNet(alpha=0.3, sigma=2.0, tol=1e-9), RankNet(alpha=0.3, sigma=2.0, tol=1e-9)
    else:
        dist = DaskDominationRank(alpha=0.5, tol=1e-8, binary=scattered)
        local = DominationRank(alpha=0.5, tol=1e-8, binary=scattered, solver="newton")
    dist.fit(*chunked(X, y, qid), client=client)
    local.fit(X, y, qid)
    np.testing.assert_allclose(dist.coef_, local.coef_, rtol=1e-8, atol=1e-12 * np.abs(local.coef_).max())
    assert dist.n_iter_ == local.n_iter_ and dist.converged_
    assert dist.objective_ == pytest.approx(local.objective_, rel=1e-12)
    assert dist.n_partitions_ >= 2 and dist.n_distributed_calls_ > dist.n_iter_
    if kind == "ranksvm":
        assert (dist.n_pairs_, dist.n_active_pairs_) == (local.n_pairs_, local.n_active_pairs_)
    elif kind == "domination":
        assert dist.kkt_violation_ == pytest.approx(local.kkt_violation_, rel=1e-6, abs=1e-12)
        np.testing.assert_allclose(dist.history_["objective"], local.history_["objective"], rtol=1e-12)
        np.testing.assert_array_equal(dist.history_["n_nonzero"], local.history_["n_nonzero"])


@pytest.mark.parametrize("kind", ["ranksvm", "domination", "ranknet"])
def test_sparse_chunks(client, kind):
    """Row chunks held as scipy CSR matrices (sparse LETOR data) give the single-machine sparse model."""
    sp = pytest.importorskip("scipy.sparse")
    X, y, qid = data(False, seed=4)
    X[X < 0.3] = 0.0
    Xd = da.from_array(X, chunks=(37, -1)).map_blocks(sp.csr_matrix, dtype=X.dtype)
    make = {"ranksvm": (DaskRankSVM, RankSVM, {"C": 0.5, "tol": 1e-8}),
            "domination": (DaskDominationRank, DominationRank, {"alpha": 0.5, "tol": 1e-8}),
            "ranknet": (DaskRankNet, RankNet, {"alpha": 0.5, "tol": 1e-9})}[kind]
    dist = make[0](**make[2]).fit(Xd, da.from_array(y, chunks=37), da.from_array(qid, chunks=37), client=client)
    local = make[1](**make[2], **({"solver": "newton"} if kind == "domination" else {}))
    local.fit(sp.csr_matrix(X), y, qid)
    np.testing.assert_allclose(dist.coef_, local.coef_, rtol=1e-8, atol=1e-12 * np.abs(local.coef_).max())
    assert dist.n_iter_ == local.n_iter_


def test_a_dataframe_and_a_plain_fitted_model(client, tmp_path):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y, qid = data(False, seed=2)
    frame = dd.from_pandas(pd.DataFrame(X), npartitions=4)
    model = DaskRankSVM(C=0.2).fit(frame, dd.from_pandas(pd.Series(y), npartitions=4),
                                   dd.from_pandas(pd.Series(qid), npartitions=4), client=client)
    np.testing.assert_allclose(model.coef_, RankSVM(C=0.2).fit(X, y, qid).coef_, rtol=1e-8)
    save_model(model, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")                   # no cluster needed from here on
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(model)).coef_, model.coef_)
    assert loaded.score(X, y, qid) == model.score(X, y, qid)


@pytest.mark.parametrize("kind", ["ranksvm", "domination"])
def test_a_worker_killed_in_the_middle_of_a_fit(client, kind):
    """After the first Newton iteration one worker process is killed and replaced (its nanny restarts it, and
    every partition it held is lost); the fit completes, Dask recomputing the lost partitions, and the model is the
    one of an undisturbed fit."""
    X, y, qid = data(False, seed=3)
    make = (lambda: DaskRankSVM(C=0.5, tol=1e-8)) if kind == "ranksvm" else (lambda: DaskDominationRank(tol=1e-8))
    calm = make().fit(*chunked(X, y, qid), client=client)
    killed = []

    def kill(w):
        if not killed:
            victim = sorted(client.scheduler_info()["workers"])[0]
            held = client.has_what()[victim]  # what the victim holds now: some of the fit's partitions
            client.restart_workers([victim])
            killed.append((victim, len(held)))

    hit = make().fit(*chunked(X, y, qid), client=client, callback=kill)
    (victim, held), = killed
    assert held > 0 and victim not in client.scheduler_info()["workers"]  # a new process, without its data
    np.testing.assert_allclose(hit.coef_, calm.coef_, rtol=1e-10)
    assert hit.n_iter_ == calm.n_iter_
    client.wait_for_workers(2, timeout=60)


def test_refuses_what_it_does_not_fit(client):
    X, y, qid = data(False)
    Xd, yd, qd = chunked(X, y, qid)
    with pytest.raises(ValueError, match="linear squared-hinge"):
        DaskRankSVM(kernel="rbf").fit(Xd, yd, qd, client=client)
    with pytest.raises(ValueError, match="smooth"):
        DaskDominationRank(penalty="l1").fit(Xd, yd, qd, client=client)
    with pytest.raises(ValueError, match="needs qid"):
        DaskRankSVM().fit(Xd, yd, client=client)
    with pytest.raises(TypeError, match="dask array"):
        DaskRankSVM().fit(X, y, qid, client=client)
