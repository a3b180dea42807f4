r"""
=========================================
Learning to rank from clicks: naive vs IPS
=========================================

Clicks are cheap relevance labels, but biased: a document at rank 10 is rarely looked at, so it is rarely
clicked, whatever its relevance. Under the position-based model the user examines rank :math:`r` with probability
:math:`p_r = (1/r)^\eta` and clicks an examined document with a probability that grows with its relevance.

Inverse propensity scoring (Joachims, Swaminathan & Schnabel, WSDM 2017) weighs each clicked document by
:math:`1 / p_r`. cyrank's pairwise rankers count the pair :math:`(i, j)`, :math:`y_i > y_j`, with the weight of
the preferred row, so with ``y = click`` and ``sample_weight = 1 / p`` on the clicked rows, RankSVM minimises

.. math::

    \frac{1}{2} w^\top w + C \sum_{\text{sessions}} \sum_{i \text{ clicked}} \frac{1}{p_{r(i)}}
    \sum_{j \text{ shown, not clicked}} \max(0, 1 - w^\top (x_i - x_j))^2,

an unbiased estimate of the loss over the relevant documents (up to the documents never shown).

Here a weak logging RankSVM, trained on 6 labelled queries, ranks 300 generated queries of 20 documents (graded
labels 0-4); :mod:`cyrank.clicks` simulates 20,000 sessions on its ranking, and three RankSVMs are compared on 100
test queries' true labels: trained on the clicks as they are (naive), on the IPS-weighted clicks, and on the full
labels. bench/bench_clicks.py runs the same comparison at scale, with RankNet, LambdaMART and the debiased trees of
LightGBM and XGBoost.
"""

# %%
# The logging ranker and the click log
# ------------------------------------
import matplotlib.pyplot as plt
import numpy as np

from cyrank import RankSVM, clicks
from cyrank.datasets import make_ranking
from cyrank.metrics import ndcg_score

X_all, y_all, qid_all = make_ranking(n_queries=400, n_docs=[20] * 400, n_features=20, n_levels=5, noise=5.0,
                                     random_state=0)
train = qid_all < 300
X, y, qid = X_all[train], y_all[train], qid_all[train]
test = X_all[~train], y_all[~train], qid_all[~train]
few = np.random.default_rng(0).choice(np.unique(qid), size=6, replace=False)  # 2% of the training queries
rows = np.isin(qid, few)
logger = RankSVM().fit(X[rows], y[rows], qid[rows])
logging_scores = logger.decision_function(X)

eta = 1.0
log = clicks.simulate_clicks(y, qid, logging_scores, n_sessions=20_000, eta=eta, top_k=10, random_state=0)
print(f"{log.session.max() + 1} sessions, {log.click.sum()} clicks; clicks per rank:",
      np.bincount(log.rank, weights=log.click)[1:].astype(int))


def test_ndcg(model):
    return ndcg_score(test[1], model.predict(test[0]), test[2], k=10)


# %%
# Naive, IPS and full information
# -------------------------------
# ``click_training_data`` makes one query per session (y = click) and weighs each clicked row by 1 / p of its rank
# (self-normalised, so the weights average 1 over the clicks and C keeps its meaning); sessions showing the same
# rows with the same clicks are merged into one query of summed weight, which is the same objective. Two logging
# set-ups: the top 10 of 20 shown (the other 10 are never seen: propensity 0, which no weight corrects), and all 20
# shown. Each is averaged over 3 simulated logs.
full = test_ndcg(RankSVM().fit(X, y, qid))
results = {}
for shown in (10, 20):
    p = clicks.position_propensity(shown, eta)
    naive, ips = [], []
    for seed in range(3):
        log = clicks.simulate_clicks(y, qid, logging_scores, n_sessions=20_000, eta=eta, top_k=shown,
                                     random_state=seed)
        plain = clicks.click_training_data(log, np.ones(shown), X, aggregate="identical")
        weighted = clicks.click_training_data(log, p, X, aggregate="identical")
        naive.append(test_ndcg(RankSVM().fit(*plain[:3])))
        ips.append(test_ndcg(RankSVM().fit(*weighted[:3], sample_weight=weighted[3])))
    results[shown] = np.mean(naive), np.mean(ips)
    print(f"top {shown} of 20 shown: naive {np.mean(naive):.4f}, IPS {np.mean(ips):.4f}, full information "
          f"{full:.4f}: IPS recovers {(np.mean(ips) - np.mean(naive)) / (full - np.mean(naive)):.0%} of the gap")
print(f"logging ranker: {test_ndcg(logger):.4f}")

# %%
# Evaluating a ranker from clicks
# -------------------------------
# Clicks also estimate a ranker's quality without labels: ``ips_metric`` weighs each click by 1 / p of the rank it
# was shown at and credits it with the discount of the rank the evaluated ranker gives it (Joachims et al. 2017,
# section 4; Agarwal et al., SIGIR 2019). ``expected_click_metric`` is the value it estimates, computed from the
# true labels; the naive estimate (p = 1) is biased. All 20 documents are shown here: with the top 10 only, the
# estimate (and the value it targets) would count only the documents the logging ranker showed.
log = clicks.simulate_clicks(y, qid, logging_scores, n_sessions=20_000, eta=eta, top_k=None, random_state=5)
full_scores = RankSVM().fit(X, y, qid).decision_function(X)
for name, scores in (("logging ranker", logging_scores), ("full-information RankSVM", full_scores)):
    estimate, se = clicks.ips_metric(log, clicks.position_propensity(20, eta), scores, qid, k=10)
    naive_estimate, _ = clicks.ips_metric(log, np.ones(20), scores, qid, k=10)
    truth = clicks.expected_click_metric(y, qid, scores, top_k=None, k=10)
    print(f"{name:26s} click DCG@10: IPS {estimate:.3f} +- {se:.3f}, naive {naive_estimate:.3f}, true {truth:.3f}")

# %%
# Estimating the propensities
# ---------------------------
# The true curve is rarely known. A randomised experiment that swaps the documents at ranks 1 and k measures
# p_k / p_1 (Joachims et al. 2017, section 5); expectation-maximisation estimates it from ordinary logs when the
# logging ranking varies (Wang et al., WSDM 2018): here two logging rankers share the traffic.
swap_log, swap_rank = clicks.simulate_swap_intervention(y, qid, logging_scores, n_sessions=20_000, eta=eta,
                                                        top_k=10, max_rank=10, random_state=1)
from_swaps = clicks.propensity_from_swaps(swap_log, swap_rank)
other_rows = np.isin(qid, np.unique(qid)[:6])  # a second logging ranker, on 6 other queries
other = RankSVM().fit(X[other_rows], y[other_rows], qid[other_rows]).decision_function(X)
varied = clicks.simulate_clicks(y, qid, np.vstack([logging_scores, other]), n_sessions=20_000, eta=eta, top_k=10,
                                random_state=2)
from_em = clicks.propensity_em(varied).propensity
ranks = np.arange(1, 11)
true_p = clicks.position_propensity(10, eta)
for name, p in (("swap intervention", from_swaps), ("EM", from_em)):
    print(f"{name:18s} p_r / p_1:", np.round(p[:10], 3), " largest error", f"{np.abs(p[:10] - true_p).max():.3f}")

fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
left.plot(ranks, true_p, "k-", label=f"true (1/r)^{eta:g}")
left.plot(ranks, from_swaps[:10], "o", label="swap intervention")
left.plot(ranks, from_em[:10], "s", mfc="none", label="EM on two logging rankers")
left.set(xlabel="rank", ylabel="relative examination propensity", title="Propensities")
left.legend()
labels = ["naive, top 10", "IPS, top 10", "naive, all 20", "IPS, all 20", "full information"]
values = [*results[10], *results[20], full]
right.barh(labels, values, color=["tab:red", "tab:green", "tab:red", "tab:green", "tab:blue"])
right.set(xlabel="test NDCG@10", xlim=(min(values) - 0.02, max(values) + 0.01),
          title="RankSVM on 20,000 simulated sessions")
fig.tight_layout()
plt.show()
