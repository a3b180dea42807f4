"""The separable split of the RankNet pair sums (_ranknet.split_lambdas, issue 28): pairs more than 37 / sigma apart
in score summed in closed form, only the close ones enumerated, equal to the exact pair sums to 1e-15 relative; and
the solver's pair loop (_ranknet.pair_lambdas: one exp per row, one log per row) against the same exact sums."""
import math

import numpy as np
import pytest
from scipy.special import expit

from cyrank.lambdarank import _ranknet


def exact_sums(s, y, offsets, sigma):
    """Loss, gradient and Gauss-Newton diagonal by every pair, each sum correctly rounded (math.fsum); also the
    sums of the absolute terms (the scale of each sum's rounding)."""
    n = s.size
    loss_terms, g_terms, h_terms = [], [[] for _ in range(n)], [[] for _ in range(n)]
    for a, b in zip(offsets[:-1], offsets[1:]):
        for i in range(a, b):
            for j in range(a, b):
                if y[i] > y[j]:
                    u = sigma * (s[i] - s[j])
                    loss_terms.append(float(np.logaddexp(0.0, -u)))
                    rho = float(expit(-u))
                    g_terms[i].append(-sigma * rho)
                    g_terms[j].append(sigma * rho)
                    h = sigma * sigma * rho * float(expit(u))
                    h_terms[i].append(h)
                    h_terms[j].append(h)
    g = np.array([math.fsum(t) for t in g_terms])
    g_abs = np.array([math.fsum(map(abs, t)) for t in g_terms])
    h = np.array([math.fsum(t) for t in h_terms])
    return math.fsum(loss_terms), g, g_abs, h


def random_queries(rng, n_queries, size, spread, sigma):
    """Queries of 2..size rows, labels 0..3 ascending inside a query, scores on a grid (ties) spread over
    ``spread`` / sigma: some pairs far apart (> 37 / sigma) both ways, some tied."""
    sizes = rng.integers(2, size + 1, n_queries)
    offsets = np.r_[0, np.cumsum(sizes)].astype(np.int64)
    y = np.concatenate([np.sort(rng.integers(0, 4, m)).astype(float) for m in sizes])
    s = np.round(rng.uniform(-spread, spread, offsets[-1]) * 4.0) / 4.0 / sigma
    s[rng.random(s.size) < 0.2] = 0.0  # more ties
    return s, y, offsets


def pair_counts(y, offsets):
    """Per row, the pairs it is in (partners of another label in its query)."""
    out = np.zeros(y.size)
    for a, b in zip(offsets[:-1], offsets[1:]):
        out[a:b] = (y[a:b, None] != y[None, a:b]).sum(axis=1)
    return out


@pytest.mark.parametrize("sigma", [1.0, 0.3, 7.0])
@pytest.mark.parametrize("spread", [5.0, 60.0, 400.0])
def test_split_equals_the_exact_pair_sums(sigma, spread):
    """Each sum within 1e-15 of the sum of its absolute terms, beyond the far well-ordered pairs' terms the split
    drops: each below e^-37 = 8.5e-17 (times sigma in the gradient, sigma^2 in the diagonal). Measured: 5.5e-16 at
    most. Spreads of 5 (no far pair), 60 and 400 (most pairs far, both ways) over sigma, with ties."""
    rng = np.random.default_rng(int(spread * 10 + sigma * 100))
    s, y, offsets = random_queries(rng, 25, 14, spread, sigma)
    loss, g, g_abs, h = exact_sums(s, y, offsets, sigma)
    dropped = 1e-16 * pair_counts(y, offsets)
    g2, h2 = np.empty(s.size), np.empty(s.size)
    got = _ranknet.split_lambdas(s, y, offsets, sigma, g2, h2)
    assert abs(got - loss) <= 1e-15 * loss + dropped.sum()
    assert np.all(np.abs(g2 - g) <= 1e-15 * g_abs + sigma * dropped)
    assert np.all(np.abs(h2 - h) <= 1e-15 * h + sigma ** 2 * dropped)
    # the solver's pair loop: rho from the rows' exp(sigma (s - max s)), whose arguments round to |argument| ulps,
    # so rho is exact to about 2 sigma (max s - min s) ulps of its query (measured: 3.5e-15 at a spread of 60)
    spread = max(float(np.ptp(s[a:b])) for a, b in zip(offsets[:-1], offsets[1:]))
    rtol = 1e-15 + 2 * 2.2e-16 * sigma * spread
    g3 = np.empty(s.size)
    got = _ranknet.pair_lambdas(s, y, offsets, sigma, g3)
    assert abs(got - loss) <= rtol * loss + dropped.sum()
    assert np.all(np.abs(g3 - g) <= rtol * g_abs + sigma * dropped)


def test_split_handles_a_query_of_one_level_and_huge_gaps():
    s = np.array([0.0, 1e6, -1e6, 3.0, 5.0])
    y = np.array([0.0, 0.0, 1.0, 1.0, 1.0])
    offsets = np.array([0, 2, 5], dtype=np.int64)
    y[:2] = 0.0
    loss, g, g_abs, h = exact_sums(s, y, offsets, 1.0)
    g2, h2 = np.empty(5), np.empty(5)
    assert _ranknet.split_lambdas(s, y, offsets, 1.0, g2, h2) == pytest.approx(loss, rel=1e-15)
    np.testing.assert_allclose(g2, g, rtol=1e-15, atol=0)
