"""One grammar of metric names (cyrank.metrics.parse_metric_name): metric_by_name, LambdaRank's metric and MLR's
loss all parse ``name[@k]`` the same way, each accepting its own names."""
import numpy as np
import pytest

from cyrank import metrics
from cyrank.lambdarank import lambdas, parse_metric
from cyrank.metrics import parse_metric_name
from cyrank.mlr import solve as mlr_solve


@pytest.mark.parametrize("spec, expected", [
    ("ndcg@10", ("ndcg", 10)), (" NDCG@3 ", ("ndcg", 3)), ("map", ("map", None)), ("P@5", ("p", 5)),
    ("prec@4", ("p", 4)), ("prec", ("p", None)), ("err@9223372036854775807", ("err", 2**63 - 1))])
def test_the_grammar(spec, expected):
    assert parse_metric_name(spec) == expected


@pytest.mark.parametrize("spec, match", [
    ("ndcg@", "positive integer"), ("ndcg@-1", "positive integer"), ("ndcg@1.5", "positive integer"),
    ("ndcg@0", "positive integer"), ("ndcg@9223372036854775808", "above 2\\*\\*63 - 1"),
    ("dcg@3", "unknown metric 'dcg@3'; known: ndcg\\[@k\\]"), ("map@2", "map takes no cut-off"),
    ("ranknet", "unknown metric")])
def test_the_grammar_refuses(spec, match):
    with pytest.raises(ValueError, match=match):
        parse_metric_name(spec)


def test_prec_is_a_synonym_of_p_in_metric_by_name():
    rng = np.random.default_rng(0)
    y, s, q = rng.integers(0, 3, 40).astype(float), rng.normal(size=40), np.repeat(np.arange(4), 10)
    assert metrics.metric_by_name("prec@3")(y, s, q) == metrics.precision_at_k(y, s, q, k=3)
    assert metrics.metric_by_name("PREC@3")(y, s, q) == metrics.metric_by_name("p@3")(y, s, q)


def test_lambdarank_names_follow_the_grammar():
    assert parse_metric("NDCG@5") == ("ndcg", 5) and parse_metric("ranknet") == ("ranknet", None)
    rng = np.random.default_rng(1)
    y, s = rng.integers(0, 3, 12).astype(float), rng.normal(size=12)
    for a, b in (("NDCG@5", "ndcg@5"), ("Err", "err")):
        np.testing.assert_array_equal(lambdas(y, s, metric=a)[1], lambdas(y, s, metric=b)[1])
    with pytest.raises(ValueError, match="unknown metric 'p@5'; known: ranknet, ndcg\\[@k\\], err\\[@k\\], map"):
        parse_metric("p@5")
    with pytest.raises(ValueError, match="ranknet takes no cut-off"):
        parse_metric("ranknet@3")


def test_mlr_precision_spellings_give_one_model():
    """'prec@k' (the older spelling, k from ``k``), 'p' with ``k``, and 'p@k' in the name are one loss."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(14, 3))
    y = (X[:, 0] > 0).astype(int)
    W = [mlr_solve(X, y, loss=loss, k=k, C=5.0, max_iter=30).W
         for loss, k in (("prec@k", 2), ("p", 2), ("p@2", 7), ("PREC@2", 7))]
    for other in W[1:]:
        np.testing.assert_array_equal(W[0], other)
    assert not np.array_equal(W[0], mlr_solve(X, y, loss="p", k=5, C=5.0, max_iter=30).W)
    with pytest.raises(ValueError, match="loss must be one of .*got 'auc@3'.*auc takes no cut-off"):
        mlr_solve(X, y, loss="auc@3")
    with pytest.raises(ValueError, match="loss must be one of .*got 'dcg'"):
        mlr_solve(X, y, loss="dcg")


def test_label_ranking_error_lives_in_labelrank_and_metrics_does_not_import_it(tmp_path):
    """cyrank.metrics is below the families: label_ranking_error (on PreferenceGraphs) is cyrank.labelrank's, and
    cyrank.metrics.label_ranking_error is the same function, imported on first use."""
    import subprocess
    import sys

    script = ("import sys, cyrank.metrics; assert 'cyrank.labelrank' not in sys.modules, 'imported'; "
              "from cyrank.metrics import label_ranking_error as a; from cyrank.labelrank import label_ranking_error "
              "as b; assert a is b; print('ok')")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.stdout.strip() == "ok", res.stderr[-2000:]
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        metrics.nonexistent  # noqa: B018
