"""scikit-learn's estimator checks (``parametrize_with_checks``) for every cyrank estimator, in one place."""
import contextlib
import importlib.util
import warnings

import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.estimator_checks import check_dataframe_column_names_consistency, parametrize_with_checks

from cyrank import MissingQidWarning, RankingDataWarning
from cyrank.domination import DominationRank
from cyrank.labelrank import LabelRankBoost
from cyrank.lambdarank import LambdaRank, RankNet
from cyrank.listwise import ListMLE, ListNet
from cyrank.mlr import MLR
from cyrank.ranksvm import RankSVM

DTYPE_OBJECT = {
    "check_dtype_object": "cyrank._validation refuses object arrays instead of casting them, by design",
}
LABEL_RANKING_FAILED = {
    **DTYPE_OBJECT,
    "check_estimator_sparse_array": "it fits sparse X; the check then expects one prediction per row, while "
                                    "predict returns a score per label (n_instances, n_labels), by design",
    "check_estimator_sparse_matrix": "as check_estimator_sparse_array",
}

PAIR_WEIGHTS = {
    check: "the pair (i, j), y_i > y_j, weighs w_i (the preferred row's weight, the IPS convention; README "
           "'Weights'): a weight equals repeating a row only for rows never on the less preferred side of a pair, and "
           "this check repeats every row (tests/test_weights_common.py tests what does hold)"
    for check in ("check_sample_weight_equivalence_on_dense_data", "check_sample_weight_equivalence_on_sparse_data")
}
ESTIMATORS = [
    DominationRank(max_iter=200, tol=1e-4),
    DominationRank(solver="cd", max_iter=200, tol=1e-4),
    DominationRank(penalty="l1", max_iter=200, tol=1e-4),
    LabelRankBoost(alpha=0.1, max_iter=100, tol=1e-4),
    LabelRankBoost(solver="boost", alpha=0.1, max_iter=50, tol=1e-4),
    RankNet(max_iter=50, tol=1e-4),
    LambdaRank(max_iter=20),
    RankSVM(max_iter=50),
    RankSVM(loss="hinge", max_iter=50, tol=1e-2),
    RankSVM(kernel="rbf", max_iter=50),
    RankSVM(kernel="precomputed", max_iter=50),
    MLR(C=1.0),
    ListNet(max_iter=50, tol=1e-4),
    ListNet(target="xendcg", penalty="l1", alpha=0.1, max_iter=50, tol=1e-4),
    ListMLE(max_iter=50, tol=1e-4),
    ListMLE(ties="breslow", top_k=3, max_iter=50, tol=1e-4),
]
if importlib.util.find_spec("lightgbm") is not None:
    from cyrank import LambdaMART
    from cyrank.lambdarank.mart import ListwiseMART

    ESTIMATORS += [LambdaMART(n_estimators=3, n_jobs=1, min_child_samples=2), LambdaMART(),
                   ListwiseMART(n_estimators=3, n_jobs=1, min_child_samples=2),
                   ListwiseMART(loss="listmle", n_estimators=3, n_jobs=1, min_child_samples=2)]


LISTWISE_WEIGHTS = {
    check: "a row's weight multiplies the terms where it is the target (ListNet: w_i p_i; ListMLE: the position it "
           "fills), while a repeated row is also a second entry of every softmax / risk set of its query and shares "
           "the target mass: the two differ (the listwise tests check what weights do mean)"
    for check in ("check_sample_weight_equivalence_on_dense_data", "check_sample_weight_equivalence_on_sparse_data")
}


def expected_failed_checks(estimator):
    if type(estimator).__name__ in ("ListNet", "ListMLE", "ListwiseMART"):
        return {**DTYPE_OBJECT, **LISTWISE_WEIGHTS}
    if isinstance(estimator, LabelRankBoost):  # instance weights: repetition holds exactly
        return LABEL_RANKING_FAILED
    if isinstance(estimator, MLR):
        return {**DTYPE_OBJECT, "check_sample_weight_equivalence_on_dense_data":
                "MLR weighs queries; a repeated row is also a second database point, relevant to its copy at distance "
                "0 (tests/test_mlr_weights.py)"}
    return {**DTYPE_OBJECT, **PAIR_WEIGHTS}


def one_openmp_thread(estimator):
    """LambdaMART and ListwiseMART: the checks fit 40 models of a few dozen rows; LightGBM's default thread count only adds overhead
    there."""
    if type(estimator).__name__ not in ("LambdaMART", "ListwiseMART"):
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits
    return threadpool_limits(1, user_api="openmp")


@parametrize_with_checks(ESTIMATORS, expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    with one_openmp_thread(estimator), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        if isinstance(estimator, DominationRank):
            warnings.simplefilter("ignore", RankingDataWarning)
        check(estimator)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=repr)
def test_dataframe_column_names(estimator):
    """scikit-learn's check of feature_names_in_ (not among parametrize_with_checks' checks in 1.9): set by a
    DataFrame fit, and predict / transform / score refuse other, missing or reordered columns in its words."""
    with one_openmp_thread(estimator), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("ignore", RankingDataWarning)
        warnings.simplefilter("ignore", MissingQidWarning)
        check_dataframe_column_names_consistency(type(estimator).__name__, estimator)
