"""Multilabel SVMlight files (LIBSVM's multilabel sets) and ``cyrank fit labelrank`` on them."""
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import load_svmlight_file

from cyrank.cli import main
from cyrank.datasets import multilabel_dataset
from cyrank.io import dump_svmlight_multilabel, load_model, load_svmlight_multilabel
from cyrank.labelrank import PreferenceGraphs, solve
from cyrank.metrics import label_ranking_error


@pytest.mark.parametrize("zero_based", [False, True])
def test_round_trip_and_equality_with_sklearn(tmp_path, zero_based, rng):
    X = sp.random(40, 9, density=0.3, random_state=1, format="lil")
    Y = (rng.random((40, 6)) < 0.3).astype(int)
    Y[3], X[3] = 0, 0  # neither label nor feature
    X = X.tocsr()
    Y[4] = 1
    path = tmp_path / "m.svm"
    dump_svmlight_multilabel(X, Y, path, zero_based=zero_based)
    X2, Y2 = load_svmlight_multilabel(path, n_features=9, n_labels=6, zero_based=zero_based)
    np.testing.assert_array_equal(X2.toarray(), X.toarray())
    np.testing.assert_array_equal(Y2.toarray(), Y)
    Xs, ys = load_svmlight_file(path, multilabel=True, n_features=9, zero_based=zero_based)
    np.testing.assert_array_equal(Xs.toarray(), X2.toarray())
    assert [tuple(int(v) for v in t) for t in ys] == [tuple(np.flatnonzero(r)) for r in Y]


def test_reading_rules_and_bad_lines(tmp_path):
    path = tmp_path / "a.svm"
    path.write_bytes(b"# comment\n2,0 1:1.5 3:2\n 2:4\n\n1 # labels only\n3:1\n")
    X, Y = load_svmlight_multilabel(path)
    np.testing.assert_array_equal(Y.toarray(), [[1, 0, 1], [0, 0, 0], [0, 1, 0], [0, 0, 0]])
    np.testing.assert_array_equal(X.toarray(), [[1.5, 0, 2], [0, 4, 0], [0, 0, 0], [0, 0, 1]])
    with pytest.raises(ValueError, match="out of range for n_labels=2"):
        load_svmlight_multilabel(path, n_labels=2)
    for text, match in ((b"1,x 1:2\n", "line 1: labels must be comma-separated"),
                        (b"1 1:2\n1,,2 1:1\n", "line 2: labels must be"),
                        (b"-1 1:2\n", "negative label"),
                        (b"1 qid:3 1:2\n", "qid tokens"),
                        (b"1 1:x\n", "line 1")):
        path.write_bytes(text)
        with pytest.raises(ValueError, match=match):
            load_svmlight_multilabel(path)


def test_cli_fit_predict_eval_labelrank(tmp_path, capsys):
    X, Y = multilabel_dataset(n_samples=120, n_features=10, n_classes=5, random_state=2)
    data, model = tmp_path / "train.svm", tmp_path / "model.npz"
    dump_svmlight_multilabel(X, Y, data)
    assert main(["fit", "labelrank", str(data), "-o", str(model), "-p", "alpha=0.3", "-p",
                 "decomposition=disagreement"]) == 0
    est = load_model(model)
    want = solve(*load_svmlight_multilabel(data), alpha=0.3, decomposition="disagreement")  # CSR, as the CLI
    np.testing.assert_allclose(est.coef_, want.coef, rtol=1e-12, atol=1e-14)
    assert est.decomposition == "disagreement" and est.objective_ == want.objective
    assert main(["predict", str(model), str(data), "-o", str(tmp_path / "s.txt")]) == 0
    scores = X @ want.coef.T  # dense here, CSR in the CLI: sums in another order, so rounding on scores near 0
    np.testing.assert_allclose(np.loadtxt(tmp_path / "s.txt"), scores, rtol=1e-12,
                               atol=1e-12 * np.abs(scores).max())
    capsys.readouterr()
    assert main(["eval", str(data), "--model", str(model)]) == 0
    out = capsys.readouterr().out
    G = PreferenceGraphs.from_indicator(Y)
    for dec in ("zero_one", "disagreement", "domination", "dominated"):
        assert f"{label_ranking_error(G, X @ want.coef.T, dec):.4f}" in out
    assert main(["fit", "labelrank", str(data), "-p", "solver=sgd"]) == 2
    assert "solver" in capsys.readouterr().err
