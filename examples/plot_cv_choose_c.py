r"""
===================================================
Choosing RankSVM's C by cross-validation on queries
===================================================

:class:`cyrank.RankSVM` (linear kernel, squared hinge, trust-region Newton) minimises

.. math::

    \frac{1}{2} w^\top w + C \sum_{(i, j) \in P} \max(0, 1 - w^\top (x_i - x_j))^2,

where :math:`P` holds the pairs of documents of the same query with :math:`y_i > y_j`. The loss is a *sum* over
pairs, so the useful range of ``C`` depends on the number of pairs; here we pick it by 5-fold cross-validation on
the embedded LightGBM learning-to-rank data (3005 documents, 201 queries, 300 features in [0, 1]).

The folds are built with :class:`sklearn.model_selection.GroupKFold` on the query ids, so no query is split
between training and validation: a ranking model is evaluated on queries it has never seen, and NDCG@10 is
computed per query and averaged.
"""

# %%
# Data
# ----
import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import GroupKFold

from cyrank import RankSVM
from cyrank.datasets import load_lightgbm_rank
from cyrank.metrics import ndcg_score

X, y, qid = load_lightgbm_rank("train")
X_test, y_test, qid_test = load_lightgbm_rank("test")
print(f"train: {X.shape[0]} documents, {np.unique(qid).size} queries; "
      f"test: {X_test.shape[0]} documents, {np.unique(qid_test).size} queries")

# %%
# Cross-validation over queries
# -----------------------------
# Every fold holds out a fifth of the queries. ``n_jobs=1`` keeps each fit on one core (the result is the
# same, bit for bit, for any thread count).
Cs = np.geomspace(1e-5, 1e2, 8)
cv = GroupKFold(n_splits=5)
folds = list(cv.split(X, y, groups=qid))
for train, valid in folds:
    assert not np.intersect1d(qid[train], qid[valid]).size  # no query on both sides

scores = np.empty((Cs.size, len(folds)))
for a, C in enumerate(Cs):
    for b, (train, valid) in enumerate(folds):
        model = RankSVM(C=C, n_jobs=1).fit(X[train], y[train], qid=qid[train])
        scores[a, b] = ndcg_score(y[valid], model.decision_function(X[valid]), qid[valid], k=10)
    print(f"C = {C:8.1e}: validation NDCG@10 = {scores[a].mean():.4f} +- {scores[a].std():.4f}")

mean, std = scores.mean(axis=1), scores.std(axis=1)
best_C = Cs[np.argmax(mean)]
print(f"best C = {best_C:.1e}")

# %%
# Refit on all training queries and evaluate on the test queries
# --------------------------------------------------------------
model = RankSVM(C=best_C, n_jobs=1).fit(X, y, qid=qid)
test_ndcg = ndcg_score(y_test, model.decision_function(X_test), qid_test, k=10)
print(f"RankSVM(C={best_C:.1e}): {model.n_iter_} Newton iterations, test NDCG@10 = {test_ndcg:.4f}")

# %%
# The validation curve
# --------------------
# The curve is rather flat on this small data set: the fold-to-fold spread (one standard deviation, shaded)
# is of the same order as the differences between values of C.
fig, ax = plt.subplots(figsize=(6, 4))
ax.semilogx(Cs, mean, "o-", label="validation (mean over 5 folds)")
ax.fill_between(Cs, mean - std, mean + std, alpha=0.25)
ax.axvline(best_C, color="k", linestyle=":", label=f"best C = {best_C:.0e}")
ax.plot(best_C, test_ndcg, "*", color="C3", markersize=12, label=f"test, refit at best C ({test_ndcg:.3f})")
ax.set_xlabel("C")
ax.set_ylabel("NDCG@10")
ax.set_title("RankSVM: 5-fold cross-validation over queries")
ax.legend(loc="lower left", fontsize=8)
fig.tight_layout()
plt.show()
