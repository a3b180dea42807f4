r"""
============================================
The L1 regularisation path of DominationRank
============================================

:class:`cyrank.DominationRank` with ``penalty="l1"`` minimises the domination loss plus an L1 penalty,

.. math::

    \sum_q \sum_{i:\, D(q, i) \neq \emptyset}
    \log\Bigl(1 + \sum_{j \in D(q, i)} e^{f_j - f_i}\Bigr) + \alpha \|w\|_1, \qquad f = X w,

where :math:`D(q, i)` are the documents of query :math:`q` with a lower label than document :math:`i`.
:func:`cyrank.domination.path` solves it for a decreasing sequence of alphas, from ``alpha_max`` (the
smallest alpha at which :math:`w = 0` is optimal, computed exactly from the gradient at 0) down to
``eps * alpha_max``, each solve warm-started from the previous one.

We compute the path on the embedded LightGBM training data minus one query in five, choose alpha by NDCG@10 on
those held-out queries, and report the test NDCG@10 of the model refitted at that alpha. The plot shows how
many of the 300 features each alpha keeps.
"""

# %%
# The path on four fifths of the training queries
# -----------------------------------------------
import matplotlib.pyplot as plt
import numpy as np

from cyrank import DominationRank
from cyrank.datasets import load_lightgbm_rank
from cyrank.domination import path
from cyrank.metrics import ndcg_score

X, y, qid = load_lightgbm_rank("train")
X_test, y_test, qid_test = load_lightgbm_rank("test")
valid = np.isin(qid, np.unique(qid)[::5])  # every fifth query is held out
fit = ~valid
print(f"path on {np.unique(qid[fit]).size} queries, validation on {np.unique(qid[valid]).size} queries")

p = path(X[fit], y[fit], qid[fit], penalty="l1", n_alphas=25, eps=1e-4, n_jobs=1)
print(p)
print(f"alpha_max = {p.alpha_max:.4g}; all {p.alphas.size} solves converged: {bool(np.all(p.converged))}, "
      f"largest KKT violation {p.kkt_violations.max():.2g}, iterations per alpha {p.n_iters.min()}-"
      f"{p.n_iters.max()}")

# %%
# Validation NDCG@10 along the path
# ---------------------------------
# Column j of the sparse ``p.coefs`` (n_features x n_alphas) holds the coefficients at ``p.alphas[j]``.
ndcg = np.empty(p.alphas.size)
n_nonzero = np.empty(p.alphas.size, dtype=int)
for j in range(p.alphas.size):
    w = p.coefs[:, j].toarray().ravel()
    n_nonzero[j] = np.count_nonzero(w)
    ndcg[j] = ndcg_score(y[valid], X[valid] @ w, qid[valid], k=10)

best = int(np.argmax(ndcg))
best_alpha = p.alphas[best]
print(f"chosen alpha = {best_alpha:.4g} (alpha / alpha_max = {best_alpha / p.alpha_max:.2g}): "
      f"{n_nonzero[best]} non-zero coefficients, validation NDCG@10 = {ndcg[best]:.4f}")

# %%
# Refit at the chosen alpha on all training queries
# -------------------------------------------------
model = DominationRank(penalty="l1", alpha=best_alpha, n_jobs=1).fit(X, y, qid=qid)
test_ndcg = ndcg_score(y_test, model.decision_function(X_test), qid_test, k=10)
print(f"DominationRank(penalty='l1', alpha={best_alpha:.4g}) with solver {model.solver_!r}: "
      f"{np.count_nonzero(model.coef_)} non-zero coefficients, test NDCG@10 = {test_ndcg:.4f}")

# %%
# Plot
# ----
ratio = p.alphas / p.alpha_max
fig, ax = plt.subplots(figsize=(6.5, 4))
ax.semilogx(ratio, ndcg, "o-", color="C0", label="validation NDCG@10")
ax.axvline(ratio[best], color="k", linestyle=":", label="chosen alpha")
ax.set_xlabel("alpha / alpha_max")
ax.set_ylabel("validation NDCG@10", color="C0")
ax.invert_xaxis()  # the path runs from alpha_max (w = 0) towards small alphas
ax2 = ax.twinx()
ax2.semilogx(ratio, n_nonzero, "s--", color="C1", markersize=4, label="non-zero coefficients")
ax2.set_ylabel("non-zero coefficients (of 300)", color="C1")
lines = ax.get_lines() + ax2.get_lines()
ax.legend(lines, [line.get_label() for line in lines], loc="center right")
ax.set_title("DominationRank, L1 path")
fig.tight_layout()
plt.show()
