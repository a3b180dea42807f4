r"""
=======================================
MLR: the learned metric as an embedding
=======================================

:class:`cyrank.MLR` (metric learning to rank, McFee & Lanckriet 2010) learns a positive semi-definite matrix
:math:`W = L^\top L` so that, for every point taken as a query, the points of its class are ranked before the
others by the distance :math:`\|x - x'\|_W`. With ``loss="auc"`` and the trace regulariser it minimises

.. math::

    \min_{W \succeq 0}\; \operatorname{tr}(W) + C \xi(W), \qquad
    \xi(W) = \frac{1}{m} \sum_q \max_{y} \bigl[\Delta(y_q^*, y)
    + \langle W, \psi(q, y) - \psi(q, y_q^*) \rangle\bigr],

where every training point :math:`q` is a query, :math:`y` ranges over its rankings, :math:`y_q^*` is the
correct one, :math:`\psi` is the partial-order feature map (a ranking by distance scores
:math:`\langle W, \psi\rangle`) and :math:`\Delta(y_q^*, y) = 1 - \mathrm{AUC}(y)`. The trace is an L1 penalty
on the eigenvalues of :math:`W`, so :math:`L` (``components_``) has few rows and ``transform(X)``
:math:`= X L^\top` is a low-dimensional embedding in which Euclidean distances are the learned ones.

On scikit-learn's Wine data (178 wines, 13 chemical measurements, 3 cultivars), z-scored, we compare the first
two principal components before and after the transform, and the 3-nearest-neighbour error in each space.
"""

# %%
# Data and fit
# ------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_wine
from sklearn.decomposition import PCA
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from cyrank import MLR

X, y = load_wine(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.4, stratify=y, random_state=0)
scaler = StandardScaler().fit(X_train)
Z_train, Z_test = scaler.transform(X_train), scaler.transform(X_test)

mlr = MLR(loss="auc", C=10.0).fit(Z_train, y_train)
print(f"MLR: objective {mlr.objective_:.4f}, certified gap {mlr.gap_:.2g}, {mlr.n_separations_} separation "
      f"calls, converged {mlr.converged_}")
print(f"rank of W: {mlr.components_.shape[0]} of {mlr.n_features_in_} "
      f"(eigenvalues {np.round(np.sum(mlr.components_ ** 2, axis=1), 3)})")

# %%
# 3-nearest-neighbour error before and after
# ------------------------------------------
# The same classifier on the z-scored features and on their MLR embedding; MLR is itself a pipeline step
# (a scikit-learn transformer). The test wines were not used by the metric.
before = KNeighborsClassifier(n_neighbors=3).fit(Z_train, y_train)
after = make_pipeline(MLR(loss="auc", C=10.0), KNeighborsClassifier(n_neighbors=3)).fit(Z_train, y_train)
err_before = 1.0 - before.score(Z_test, y_test)
err_after = 1.0 - after.score(Z_test, y_test)
print(f"3-NN test error: z-scored features {err_before:.3f}, MLR embedding {err_after:.3f} "
      f"({y_test.size} test wines)")

# %%
# Two-dimensional views
# ---------------------
# Before: the first two principal components of the z-scored data. After: the first two principal components
# of ``mlr.transform`` (the embedding has as many dimensions as W has non-zero eigenvalues). Filled markers are
# training wines, open ones test wines.
E_train, E_test = mlr.transform(Z_train), mlr.transform(Z_test)
pca_before = PCA(n_components=2).fit(Z_train)
pca_after = PCA(n_components=2).fit(E_train)
views = {
    "before: PCA of the z-scored data": (pca_before.transform(Z_train), pca_before.transform(Z_test)),
    "after: PCA of the MLR embedding X L'": (pca_after.transform(E_train), pca_after.transform(E_test)),
}
fig, axes = plt.subplots(1, 2, figsize=(10, 4.3))
for ax, (title, (P_train, P_test)) in zip(axes, views.items()):
    for c in np.unique(y):
        ax.scatter(*P_train[y_train == c].T, s=18, color=f"C{c}", label=f"cultivar {c}")
        ax.scatter(*P_test[y_test == c].T, s=22, facecolors="none", edgecolors=f"C{c}")
    ax.set_title(title)
    ax.set_xlabel("component 1")
    ax.set_ylabel("component 2")
    ax.set_aspect("equal", adjustable="datalim")
axes[0].legend(loc="best")
fig.suptitle(f"Wine, 3-NN test error {err_before:.3f} before, {err_after:.3f} after MLR (C = 10)")
fig.tight_layout()
plt.show()
