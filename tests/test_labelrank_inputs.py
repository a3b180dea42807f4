"""Issue 26 (second hostile audit), the label-ranking causes: one test per cause."""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from cyrank.labelrank import LabelRankBoost, PreferenceGraphs


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
