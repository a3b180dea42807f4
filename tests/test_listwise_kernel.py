"""The listwise kernel (cyrank/listwise/_loss.pyx) against brute force: per query, the loss from its definition
(written here from the formulas of issue 31, not from the kernel's prefix sums), the gradient and the Hessian by
torch's autograd in float64 and by finite differences; Hv, diag(H) and doc_gradients; label ties, one-row
queries, all-equal labels, top_k, weights, score gaps of 1e3, thread counts."""
import numpy as np
import pytest
from scipy.special import logsumexp
from threadpoolctl import threadpool_limits

from cyrank.listwise import _loss, doc_gradients
from cyrank.listwise.solver import DocGradients, Prepared

torch = pytest.importorskip("torch")


# ------------------------------------------------------------------------------------------------ brute force
def brute_targets(y, target, g):
    if target == "exp":
        num = np.exp(y - y.max())
    elif target == "gain":
        num = 2.0 ** y - 1.0
    else:
        num = 2.0 ** y - g
    s = num.sum()
    return num / s if s > 0 else np.zeros_like(num)


def brute_query_terms(y, loss, target, ties, top_k, w, g):
    """The query's loss as a list of (coefficient vector c over rows, log-weights over rows or None) terms:
    L = sum_terms [sum_i c_i ... ] -- returned as a function of f (numpy or torch)."""
    n = y.shape[0]
    if loss == "listnet":
        c = w * brute_targets(y, target, g)

        def L(f, lse):
            return c.sum() * lse(f, np.ones(n)) - (c * f).sum() if not torch.is_tensor(f) else \
                float(c.sum()) * lse(f, np.ones(n)) - (torch.as_tensor(c) * f).sum()
        return L
    order = np.argsort(-y, kind="stable")
    ys = y[order]
    levels = []
    start = 0
    while start < n:
        end = start
        while end < n and ys[end] == ys[start]:
            end += 1
        levels.append((start, end))
        start = end
    terms = []  # (coefficients over the rows: the linear part, a-weights over the rows: the denominator, weight)
    for s, e in levels:
        m = e - s
        G = order[s:e]
        below = order[e:]
        for r in range(m):
            t = s + r
            if top_k is not None and t >= top_k:
                break
            a = np.zeros(n)
            a[below] = 1.0
            a[G] = (1.0 - r / m) if ties == "efron" else 1.0
            lin = np.zeros(n)
            lin[G] = w[G] / m
            terms.append((lin, a, w[G].sum() / m))

    def L(f, lse):
        total = 0.0
        for lin, a, c in terms:
            if torch.is_tensor(f):
                total = total + c * lse(f, a) - (torch.as_tensor(lin) * f).sum()
            else:
                total += c * lse(f, a) - (lin * f).sum()
        return total
    return L


def np_lse(f, a):
    keep = a > 0
    return logsumexp(f[keep], b=a[keep])


def torch_lse(f, a):
    keep = torch.as_tensor(a > 0)
    return torch.logsumexp(f[keep] + torch.log(torch.as_tensor(a[a > 0])), dim=0)


def brute(y, qid, f, *, loss="listnet", target="exp", ties="efron", top_k=None, w=None, seed=0):
    """(loss, gradient, Hessian) over all rows, by query, with torch autograd (float64)."""
    n = y.shape[0]
    w = np.ones(n) if w is None else w
    g = np.random.default_rng(seed).random(n)
    total, grad, H = 0.0, np.zeros(n), np.zeros((n, n))
    for q in np.unique(qid):
        rows = np.flatnonzero(qid == q)
        L = brute_query_terms(y[rows], loss, target, ties, top_k, w[rows], g[rows])
        total += L(f[rows], np_lse)
        ft = torch.tensor(f[rows], dtype=torch.float64)
        fun = lambda v: L(v, torch_lse)  # noqa: E731
        grad[rows] = torch.autograd.functional.jacobian(fun, ft).numpy()
        H[np.ix_(rows, rows)] = torch.autograd.functional.hessian(fun, ft).numpy()
    return total, grad, H


def kernel(y, qid, f, *, u=None, parallel_min_rows=-1, **kw):
    prep = Prepared(y, qid, parallel_min_rows=parallel_min_rows, sample_weight=kw.pop("w", None),
                    random_state=kw.pop("seed", 0), **kw)
    n = y.shape[0]
    st = prep.new_state()
    g = np.empty(n)
    qloss = np.empty(prep.groups.n_queries)
    value = _loss.evaluate(prep.layout, f, g, st, qloss)
    hv = None
    if u is not None:
        hv = np.empty(n)
        _loss.hess_vec(prep.layout, st, u, hv, np.empty(n))
    diag = np.empty(n)
    _loss.hess_diag(prep.layout, st, diag)
    return value, g, hv, diag, qloss


def data(seed, n=60, n_q=7, levels=3, scale=1.0):
    rng = np.random.default_rng(seed)
    qid = rng.integers(0, n_q, n)
    qid[0] = n_q + 5  # a one-row query
    y = rng.integers(0, levels, n).astype(float)
    y[qid == 1] = 2.0  # a query of equal labels
    f = rng.normal(size=n) * scale
    return y, qid, f


CASES = [dict(loss="listnet", target="exp"), dict(loss="listnet", target="gain"),
         dict(loss="listnet", target="xendcg", seed=7), dict(loss="listmle", ties="efron"),
         dict(loss="listmle", ties="breslow"), dict(loss="listmle", top_k=1), dict(loss="listmle", top_k=3),
         dict(loss="listmle", ties="breslow", top_k=2)]


@pytest.mark.parametrize("kw", CASES, ids=lambda k: "-".join(map(str, k.values())))
@pytest.mark.parametrize("weighted", [False, True])
def test_kernel_vs_autograd(kw, weighted):
    y, qid, f = data(1)
    rng = np.random.default_rng(2)
    w = rng.uniform(0, 3, y.shape[0]) if weighted else None
    if weighted:
        w[:5] = 0.0
    u = rng.normal(size=y.shape[0])
    value, g, hv, diag, qloss = kernel(y, qid, f, u=u, w=w, **kw)
    L, G, H = brute(y, qid, f, w=w, **kw)
    assert value == pytest.approx(L, rel=1e-12, abs=1e-12)
    assert qloss.sum() == pytest.approx(value, rel=1e-14)
    np.testing.assert_allclose(g, G, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(hv, H @ u, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(diag, np.diag(H), rtol=1e-9, atol=1e-12)
    # doc_gradients, the public entry point, gives the same numbers
    dg, dh = doc_gradients(f, y, qid, sample_weight=w, random_state=kw.get("seed"),
                           **{k: v for k, v in kw.items() if k != "seed"})
    np.testing.assert_array_equal(dg, g)
    np.testing.assert_array_equal(dh, diag)


@pytest.mark.parametrize("kw", CASES[:1] + CASES[3:6], ids=lambda k: "-".join(map(str, k.values())))
def test_gradient_and_hv_by_finite_differences(kw):
    y, qid, f = data(3)
    u = np.random.default_rng(4).normal(size=y.shape[0])
    value, g, hv, _, _ = kernel(y, qid, f, u=u, **kw)
    h = 1e-6
    gp = kernel(y, qid, f + h * u, **kw)
    gm = kernel(y, qid, f - h * u, **kw)
    assert (gp[0] - gm[0]) / (2 * h) == pytest.approx(g @ u, rel=1e-7)
    np.testing.assert_allclose((gp[1] - gm[1]) / (2 * h), hv, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("kw", CASES, ids=lambda k: "-".join(map(str, k.values())))
def test_score_gaps_of_1e3(kw):
    """Scores +-1e3 apart within a query: finite everything, equal to the stable brute force."""
    y, qid, f = data(5)
    f = np.where(np.random.default_rng(6).random(f.shape[0]) < 0.5, -1e3, 1e3) + f
    u = np.random.default_rng(7).normal(size=y.shape[0])
    value, g, hv, diag, _ = kernel(y, qid, f, u=u, **kw)
    assert np.isfinite(value) and np.all(np.isfinite(g)) and np.all(np.isfinite(hv)) and np.all(np.isfinite(diag))
    L, G, H = brute(y, qid, f, **kw)
    assert value == pytest.approx(L, rel=1e-12)
    np.testing.assert_allclose(g, G, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(hv, H @ u, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(diag, np.diag(H), rtol=1e-8, atol=1e-12)


def test_large_offsets_and_bad_rankings():
    """Scores of 1e3 in the wrong order (ListMLE's bottom rows far above the top: the suffix maxima matter)."""
    y = np.array([3.0, 2, 2, 1, 0, 0])
    qid = np.zeros(6)
    f = np.array([-1e3, -500, -1e3, 0, 1e3, 999.0])
    for kw in CASES:
        value, g, _, diag, _ = kernel(y, qid, f, **kw)
        L, G, H = brute(y, qid, f, **kw)
        assert value == pytest.approx(L, rel=1e-12)
        np.testing.assert_allclose(g, G, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(diag, np.diag(H), rtol=1e-8, atol=1e-12)


def test_special_queries():
    """A one-row query contributes 0 and a zero gradient; a query of equal labels under ListMLE (one tie group)
    and ListNet pushes the scores towards equal; target="gain" with all-zero labels contributes nothing."""
    y = np.array([1.0, 0, 0, 0, 2, 2, 2])
    qid = np.array([0, 1, 1, 1, 2, 2, 2])
    f = np.array([5.0, 1.0, -2.0, 0.5, 3.0, 1.0, 0.0])
    for kw in CASES:
        value, g, _, diag, qloss = kernel(y, qid, f, **kw)
        assert qloss[0] == 0.0 and g[0] == 0.0 and diag[0] == 0.0
        if kw.get("target") == "gain":
            assert qloss[1] == 0.0 and np.all(g[1:4] == 0.0)
        else:
            assert qloss[1] > 0.0
        # equal scores in a query of equal labels and equal weights: gradient 0 there
        _, g_eq, _, _, _ = kernel(y, qid, np.r_[f[:4], 1.0, 1.0, 1.0], **kw)
        if kw.get("top_k") is None and kw.get("target") != "xendcg":  # xendcg's noise makes p non-uniform
            np.testing.assert_allclose(g_eq[4:], 0.0, atol=1e-15)


def test_without_ties_is_plain_listmle():
    rng = np.random.default_rng(8)
    y = rng.permutation(12).astype(float)
    f = rng.normal(size=12)
    order = np.argsort(-y)
    expected = sum(logsumexp(f[order[t:]]) - f[order[t]] for t in range(12))
    for ties in ("efron", "breslow"):
        assert kernel(y, np.zeros(12), f, loss="listmle", ties=ties)[0] == pytest.approx(expected, rel=1e-13)


def test_row_permutation_and_threads():
    y, qid, f = data(9, n=3000, n_q=60, levels=5)
    u = np.random.default_rng(10).normal(size=y.shape[0])
    perm = np.random.default_rng(11).permutation(y.shape[0])
    for kw in CASES:
        with threadpool_limits(1, user_api="openmp"):
            one = kernel(y, qid, f, u=u, parallel_min_rows=0, **kw)
        with threadpool_limits(2, user_api="openmp"):
            two = kernel(y, qid, f, u=u, parallel_min_rows=0, **kw)
        for a, b in zip(one, two):
            np.testing.assert_array_equal(a, b)
        if kw.get("target") == "xendcg":
            continue  # its noise is drawn per row in input order: a permutation draws other g
        p = kernel(y[perm], qid[perm], f[perm], u=u[perm], **kw)
        assert p[0] == pytest.approx(one[0], rel=1e-13)
        np.testing.assert_allclose(p[1], one[1][perm], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(p[2], one[2][perm], rtol=1e-11, atol=1e-14)


def test_doc_gradients_prepared_once_and_checks():
    y, qid, f = data(12)
    dg = DocGradients(y, qid, loss="listmle")
    a = dg(f)
    b = doc_gradients(f, y, qid, loss="listmle")
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    with pytest.raises(ValueError, match="scores"):
        dg(f[:-1])
    with pytest.raises(ValueError, match="loss"):
        doc_gradients(f, y, qid, loss="listwise")
    with pytest.raises(ValueError, match="non-negative"):
        doc_gradients(f, y - 1.0, qid, target="gain")
    with pytest.raises(TypeError, match="top_k"):
        doc_gradients(f, y, qid, loss="listmle", top_k=1.5)
    with pytest.raises(ValueError, match="sample_weight"):
        doc_gradients(f, y, qid, sample_weight=-np.ones(y.shape[0]))


def test_set_noise_redraws_the_xendcg_target_as_a_seed_would():
    """DocGradients.set_noise(g) (a tree learner's per-round redraw) gives exactly the gradients of the xendcg
    target drawn from a seed whose draw is g; anything but ListNet's xendcg, or a bad g, is refused."""
    rng = np.random.default_rng(5)
    y = rng.integers(0, 4, 60).astype(float)
    qid = np.repeat(np.arange(6), 10)
    scores = rng.normal(size=60)
    kernel = DocGradients(y, qid, target="xendcg", random_state=1)
    kernel.set_noise(np.random.default_rng(7).random(60))
    for ours, seeded in zip(kernel(scores), doc_gradients(scores, y, qid, target="xendcg", random_state=7)):
        np.testing.assert_array_equal(ours, seeded)
    with pytest.raises(ValueError, match="60 values in \\[0, 1\\)"):
        kernel.set_noise(np.full(60, 1.0))
    with pytest.raises(ValueError, match="redraws the xendcg target of ListNet"):
        DocGradients(y, qid, loss="listmle").set_noise(np.zeros(60))
