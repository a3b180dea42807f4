r"""
=================================
RankSVM: linear versus RBF kernel
=================================

A linear ranker scores a document by :math:`w^\top x`; it cannot rank well when relevance is not monotone in
any direction of feature space. Here relevance (labels 0, 1, 2) decreases with the distance of a 2-D document
to the origin: a ring structure that no linear function orders. The kernel RankSVM of :class:`cyrank.RankSVM`
(``kernel="rbf"``) minimises, with :math:`Q = K(X, X)`, :math:`K(x, x') = \exp(-\gamma \|x - x'\|^2)`,

.. math::

    \frac{1}{2} \beta^\top Q \beta
    + C \sum_{(i, j) \in P} \max\bigl(0, 1 - (Q\beta)_i + (Q\beta)_j\bigr)^2

over :math:`\beta` (Kuo, Lee & Lin 2014), :math:`P` the pairs of documents of one query with
:math:`y_i > y_j`; the linear model minimises the same objective with :math:`Q\beta` replaced by :math:`X w`
and :math:`\beta^\top Q \beta` by :math:`w^\top w`. Both are solved by trust-region Newton.

The data: 40 queries of 25 documents, 30 queries for training and 10 for testing.
"""

# %%
# A ranking problem with circular relevance
# -----------------------------------------
import time

import matplotlib.pyplot as plt
import numpy as np

from cyrank import RankSVM
from cyrank.metrics import ndcg_score

rng = np.random.default_rng(0)
n_queries, n_docs = 40, 25
qid = np.repeat(np.arange(n_queries), n_docs)
X = rng.uniform(-2.0, 2.0, size=(n_queries * n_docs, 2))
radius = np.hypot(X[:, 0], X[:, 1]) + 0.15 * rng.standard_normal(X.shape[0])  # noisy distance to the origin
y = 2.0 - np.digitize(radius, [0.8, 1.5])  # 2 near the origin, 1 on the ring, 0 outside
train, test = qid < 30, qid >= 30
print(f"{X.shape[0]} documents, labels 0/1/2: {np.bincount(y.astype(int)).tolist()}")

# %%
# Fit both models
# ---------------
models = {
    "linear": RankSVM(C=1.0, kernel="linear", n_jobs=1),
    "rbf": RankSVM(C=1.0, kernel="rbf", gamma=1.0, n_jobs=1),
}
results = {}
for name, model in models.items():
    start = time.perf_counter()
    model.fit(X[train], y[train], qid=qid[train])
    seconds = time.perf_counter() - start
    ndcg = ndcg_score(y[test], model.decision_function(X[test]), qid[test], k=10)
    results[name] = ndcg
    extra = (f", {model.beta_.size} support rows" if name == "rbf" else "")
    print(f"{name:6s}: test NDCG@10 = {ndcg:.4f}, fit {seconds * 1e3:.1f} ms, {model.n_iter_} Newton iterations, "
          f"{model.n_pairs_} pairs{extra}")

# %%
# Decision functions on a grid
# ----------------------------
# Higher score = ranked higher (yellow). The test documents are coloured by their label: the linear model can
# only tilt a plane, the RBF model recovers the circular level sets.
grid = np.linspace(-2.2, 2.2, 150)
gx, gy = np.meshgrid(grid, grid)
G = np.column_stack([gx.ravel(), gy.ravel()])

fig, axes = plt.subplots(1, 2, figsize=(10, 4.5), sharex=True, sharey=True)
for ax, (name, model) in zip(axes, models.items()):
    score = model.decision_function(G).reshape(gx.shape)
    cs = ax.contourf(gx, gy, score, levels=20, cmap="viridis")
    fig.colorbar(cs, ax=ax, label="score")
    for label, marker in zip((0, 1, 2), ("o", "s", "^")):
        pts = X[test][y[test] == label]
        ax.scatter(pts[:, 0], pts[:, 1], marker=marker, s=16, color=plt.cm.autumn(label / 2),
                   edgecolors="k", linewidths=0.4, label=f"label {label}")
    ax.set_title(f"{name} kernel: test NDCG@10 = {results[name]:.3f}")
    ax.set_aspect("equal")
    ax.set_xlabel("feature 1")
axes[0].set_ylabel("feature 2")
axes[0].legend(loc="lower left", fontsize=8, framealpha=0.9)
fig.tight_layout()
plt.show()
