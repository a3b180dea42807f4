"""Distributed TRON on Dask (cyrank.dask): on a two-process LocalCluster, DaskRankSVM, DaskDominationRank and
DaskRankNet reach the single-machine coefficients and iteration counts with queries straddling chunk boundaries,
DaskLabelRankBoost the single-machine objective on instances split by rows, they survive a worker killed in the
middle of a fit, and give plain single-machine estimators."""
import pickle
import warnings

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from cyrank import DominationRank, LabelRankBoost, RankNet, RankSVM  # noqa: E402
from cyrank.dask import (DaskDominationRank, DaskLabelRankBoost, DaskRankNet, DaskRankSVM, FAMILIES,  # noqa: E402
                         query_partitions, row_partitions)
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
    names = [f"f{j}" for j in range(X.shape[1])]
    frame = dd.from_pandas(pd.DataFrame(X, columns=names), npartitions=4)
    model = DaskRankSVM(C=0.2).fit(frame, dd.from_pandas(pd.Series(y), npartitions=4),
                                   dd.from_pandas(pd.Series(qid), npartitions=4), client=client)
    np.testing.assert_allclose(model.coef_, RankSVM(C=0.2).fit(X, y, qid).coef_, rtol=1e-8)
    assert list(model.feature_names_in_) == names               # the dask DataFrame's column names
    save_model(model, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")                   # no cluster needed from here on
    assert list(loaded.feature_names_in_) == names
    with pytest.raises(ValueError, match="same order"):
        loaded.predict(pd.DataFrame(X, columns=names)[names[::-1]])
    X = pd.DataFrame(X, columns=names)
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


# ------------------------------------------------------------------------------------------- label ranking
def label_data(seed, n=300, d=6, L=4):
    """Instances with a 0/1 indicator of L labels from a noisy linear score (some rows without a relevant label,
    some with every label relevant: instances without a preference edge)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    Y = (X @ rng.normal(size=(d, L)) + rng.normal(size=(n, L)) > 0.4).astype(np.int8)
    return X, Y


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("penalty", ["l2", "elasticnet"])
def test_label_rank_boost_reaches_the_single_machine_objective(client, sparse, penalty):
    """Rows are instances (no queries): each row chunk is a partition, nothing moves; the distributed fit reaches
    LabelRankBoost's objective to 1e-8 relative, and the fitted model is a plain LabelRankBoost."""
    spm = pytest.importorskip("scipy.sparse")
    X, Y = label_data(5)
    if sparse:
        X[np.abs(X) < 0.6] = 0.0
    Xd = da.from_array(X, chunks=(37, -1))
    if sparse:
        Xd = Xd.map_blocks(spm.csr_matrix, dtype=X.dtype)
    params = {"alpha": 0.3, "tol": 1e-14, "penalty": penalty, "l1_ratio": 0.0}
    dist = DaskLabelRankBoost(**params).fit(Xd, da.from_array(Y, chunks=(50, -1)), client=client)  # rechunked
    local = LabelRankBoost(**params).fit(spm.csr_matrix(X) if sparse else X, Y)
    assert dist.converged_ and dist.n_partitions_ == 9 and dist.rows_moved_ == 0
    assert dist.objective_ == pytest.approx(local.objective_, rel=1e-8)
    assert dist.objective(X, Y) == pytest.approx(local.objective_, rel=1e-8)  # the model's own objective
    np.testing.assert_allclose(dist.coef_, local.coef_, rtol=1e-6, atol=1e-8 * np.abs(local.coef_).max())
    assert dist.coef_.shape == (4, 6) and dist.n_labels_ == 4 and dist.n_features_in_ == 6
    assert dist.gap_ <= 1e-14 * max(1.0, abs(dist.objective_)) and dist.solver_ == "newton" and dist.joint_coef_ is None
    assert dist.score(X, Y) == pytest.approx(local.score(X, Y), abs=1e-12)


def test_label_rank_boost_model_file_and_partitions(client, tmp_path):
    X, Y = label_data(6, n=120)
    parts, moved = row_partitions(da.from_array(X, chunks=(50, -1)), da.from_array(Y, chunks=(50, -1)))
    blocks = [p.compute() for p in parts]
    assert moved == 0 and [b[0].shape[0] for b in blocks] == [50, 50, 20]
    np.testing.assert_array_equal(np.concatenate([b[1] for b in blocks]), Y)
    model = DaskLabelRankBoost(alpha=0.1).fit(da.from_array(X, chunks=(50, -1)), da.from_array(Y, chunks=(50, -1)),
                                              client=client)
    save_model(model, tmp_path / "m.npz")
    loaded = load_model(tmp_path / "m.npz")
    assert type(loaded) is DaskLabelRankBoost and loaded.n_partitions_ == 3
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))


def test_label_rank_boost_default_alpha_fits(client):
    """The default alpha is 1e-3 (LabelRankBoost's 0 is refused on Dask): DaskLabelRankBoost() fits, clones and
    reaches the single-machine objective."""
    from sklearn.base import clone

    X, Y = label_data(7, n=60)
    est = DaskLabelRankBoost()
    assert est.get_params()["alpha"] == 1e-3 and clone(est).get_params() == est.get_params()
    model = est.fit(da.from_array(X, chunks=(20, -1)), da.from_array(Y, chunks=(20, -1)), client=client)
    single = LabelRankBoost(alpha=1e-3).fit(X, Y)
    # both objectives lie between the optimum and the optimum plus their certified gaps
    assert model.converged_ and abs(model.objective_ - single.objective_) <= (model.gap_ + single.gap_
                                                                              + 1e-12 * abs(single.objective_))


def test_label_rank_boost_refuses_what_it_does_not_fit(client):
    X, Y = label_data(7, n=60)
    Xd, Yd = da.from_array(X, chunks=(20, -1)), da.from_array(Y, chunks=(20, -1))
    with pytest.raises(ValueError, match="alpha > 0"):
        DaskLabelRankBoost(alpha=0.0).fit(Xd, Yd, client=client)          # alpha = 0: no minimiser to detect
    with pytest.raises(ValueError, match="smooth objective only"):
        DaskLabelRankBoost(alpha=1.0, penalty="l1").fit(Xd, Yd, client=client)
    with pytest.raises(ValueError, match="solver"):
        DaskLabelRankBoost(alpha=1.0, solver="boost").fit(Xd, Yd, client=client)
    with pytest.raises(ValueError, match="no queries"):
        DaskLabelRankBoost(alpha=1.0).fit(Xd, Yd, da.zeros(60, chunks=20), client=client)
    with pytest.raises(ValueError, match="2-d"):
        DaskLabelRankBoost(alpha=1.0).fit(Xd, Yd[:, 0], client=client)


def test_one_table_of_families():
    """Every Dask estimator is its family's entry: the single-machine estimator it subclasses, and the public loss
    builder of that family (no private construction)."""
    import cyrank

    for cls in (DaskRankSVM, DaskDominationRank, DaskRankNet, DaskLabelRankBoost):
        family = FAMILIES[cls._family]
        assert issubclass(cls, family.base) and family.base.__name__ in cyrank.ESTIMATORS
        assert family.loss.__name__ == "loss" and not family.loss.__module__.split(".")[-1].startswith("_")


def test_no_private_name_from_a_family_folder():
    """cyrank.dask builds every loss through the families' public API: no import of an underscore name (or module)
    from a family's folder."""
    import ast
    import pathlib

    import cyrank.dask

    families = {"domination", "lambdarank", "ranksvm", "labelrank", "mlr"}

    def private_names(source):
        tree = ast.parse(source)
        aliases, found = set(), []  # local names bound to a family's package or module (or function)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                path = (node.module or "").split(".") if node.module else []
                for a in node.names:
                    full = path + [a.name]
                    if full[0] not in families:
                        continue
                    if any(p.startswith("_") for p in full):
                        found.append(".".join(full))
                    if a.name[:1].islower():  # a module (a class's protocol attributes, e.g. _model_schema, are not)
                        aliases.add(a.asname or a.name)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and node.attr.startswith("_"):
                found.append(f"{node.value.id}.{node.attr}")
        return found

    # the check sees what the old module did
    assert private_names("from .domination import solver as _dsolver\n_dsolver._layout") == ["_dsolver._layout"]
    assert private_names("from .lambdarank.solver import _Pairs") == ["lambdarank.solver._Pairs"]
    assert private_names(pathlib.Path(cyrank.dask.__file__).read_text()) == []


@pytest.mark.parametrize("kind", ["ranksvm", "domination", "ranknet", "labelrank"])
def test_sample_weight_gives_the_single_machine_weighted_model(client, kind):
    """Weights travel with their rows (scattered queries move between partitions with their weights) and give the
    single-machine weighted fit; the driver refuses bad weights with the single-machine message."""
    rng = np.random.default_rng(7)
    if kind == "labelrank":
        X, y = label_data(7)
        qid, w = None, rng.integers(0, 4, size=X.shape[0]).astype(float)
        dist, local = DaskLabelRankBoost(alpha=0.3, tol=1e-14), LabelRankBoost(alpha=0.3, tol=1e-14)
        Xd, yd = da.from_array(X, chunks=(37, -1)), da.from_array(y, chunks=(37, -1))
    else:
        X, y, qid = data(True, seed=5)
        w = rng.integers(0, 4, size=y.shape[0]).astype(float)
        dist, local = {"ranksvm": (DaskRankSVM(C=0.5, tol=1e-8), RankSVM(C=0.5, tol=1e-8)),
                       "ranknet": (DaskRankNet(alpha=0.3, tol=1e-9), RankNet(alpha=0.3, tol=1e-9)),
                       "domination": (DaskDominationRank(alpha=0.5, tol=1e-8),
                                      DominationRank(alpha=0.5, tol=1e-8, solver="newton"))}[kind]
        Xd, yd, qd = chunked(X, y, qid)
    wd = da.from_array(w, chunks=37)
    args = (Xd, yd) if qid is None else (Xd, yd, qd)
    dist.fit(*args, client=client, sample_weight=wd)
    local.fit(X, y, *(() if qid is None else (qid,)), sample_weight=w)
    unweighted = type(local)(**local.get_params()).fit(X, y, *(() if qid is None else (qid,)))
    assert np.abs(unweighted.coef_ - local.coef_).max() > 1e-3 * np.abs(local.coef_).max()  # the weights matter
    np.testing.assert_allclose(dist.coef_, local.coef_, rtol=1e-6, atol=1e-8 * np.abs(local.coef_).max())
    assert dist.objective_ == pytest.approx(local.objective_, rel=1e-10)
    if kind == "ranksvm":
        assert dist.pair_weight_sum_ == pytest.approx(local.pair_weight_sum_, rel=1e-12)
        assert dist.n_pairs_ == local.n_pairs_
    w_first_half = np.where(np.arange(w.size) < w.size // 2, 0.0, w)  # the first partitions weigh 0
    half = type(dist)(**dist.get_params()).fit(*args, client=client, sample_weight=da.from_array(w_first_half, 37))
    local_half = type(local)(**local.get_params()).fit(X, y, *(() if qid is None else (qid,)),
                                                       sample_weight=w_first_half)
    assert half.objective_ == pytest.approx(local_half.objective_, rel=1e-8)
    for bad, message in ((-w, "must be >= 0"), (0 * w, "0 on every row"), (w[:-1], "sample_weight has")):
        with pytest.raises(ValueError, match=message):
            type(dist)(**dist.get_params()).fit(*args, client=client, sample_weight=da.from_array(bad, chunks=37))
