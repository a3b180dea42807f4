r"""
==================================================
Certified duality gaps of the cutting-plane method
==================================================

The hinge-loss RankSVM (``RankSVM(loss="hinge")``) and :class:`cyrank.MLR` are solved by the same 1-slack
cutting-plane method (Joachims 2006; McFee & Lanckriet 2010, Algorithm 1; ``cyrank.optim.cutting_plane``):
for an objective :math:`f(w) = R(w) + C\,\xi(w)`, where :math:`\xi` is a maximum over exponentially many
linear constraints, each iteration asks a separation oracle for the most violated constraint at the current
point, adds it to a working set, and re-solves the restricted problem over the working set. Two numbers
come out of every iteration:

* the primal value :math:`f(w_k)`, measured exactly by the oracle (an upper bound on the optimum);
* the dual value of the restricted problem, a lower bound on the optimum (the restricted problem is a
  relaxation).

Their difference is a *certified* duality gap: the returned model is within it of the optimum. Here:

* RankSVM minimises :math:`\frac12 w^\top w + C \sum_{(i,j) \in P} \max(0, 1 - w^\top(x_i - x_j))` on the
  embedded LightGBM data; it stops when the gap is at most ``tol`` :math:`\cdot\, C |P|` (``tol`` times the
  objective at :math:`w = 0`);
* MLR (``loss="auc"``, trace regulariser) on the z-scored Wine data, with Kelley's plain method
  (``stabilization=0``) and the default in-out stabilisation (``stabilization=0.7``), which stops when the gap
  is at most :math:`C \cdot` ``tol``.

Both estimators record the bounds after every separation in ``history_``: ``"objective"`` (the exact value
at the point separated), ``"lower_bound"`` (the best restricted dual value so far) and ``"gap"`` (the certified
gap the stopping rule tests).
"""

# %%
# RankSVM with the hinge loss
# ---------------------------
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_wine
from sklearn.preprocessing import StandardScaler

from cyrank import MLR, RankSVM
from cyrank.datasets import load_lightgbm_rank

X, y, qid = load_lightgbm_rank("train")
C_svm, tol_svm = 0.1, 1e-3
svm = RankSVM(C=C_svm, loss="hinge", tol=tol_svm, n_jobs=1).fit(X, y, qid=qid)
print(f"RankSVM (hinge, C={C_svm}): {svm.n_iter_} cutting planes, objective {svm.objective_:.6g}, "
      f"certified gap {svm.duality_gap_:.3g} (tol * C |P| = {tol_svm * C_svm * svm.n_pairs_:.3g}), "
      f"converged {svm.converged_}")
h = svm.history_
svm_k = np.arange(1, h["objective"].size + 1)
scale_svm = C_svm * svm.n_pairs_  # the objective at w = 0
for k in np.unique(np.geomspace(1, svm_k[-1], 8).astype(int)):
    print(f"  after {k:4d} separations: objective {h['objective'][k - 1]:10.4f}, "
          f"gap / (C |P|) {h['gap'][k - 1] / scale_svm:.2e}")

# %%
# MLR on Wine: Kelley's method and in-out stabilisation
# -----------------------------------------------------
Z, labels = load_wine(return_X_y=True)
Z = StandardScaler().fit_transform(Z)
C_mlr, tol_mlr = 10.0, 1e-3
mlr_fits = {}
for alpha in (0.0, 0.7):
    m = MLR(loss="auc", C=C_mlr, tol=tol_mlr, stabilization=alpha).fit(Z, labels)
    print(f"MLR (stabilization={alpha}): {m.n_separations_} separation calls, {m.n_batches_} cutting "
          f"planes, objective {m.objective_:.5f}, lower bound {m.lower_bound_:.5f}, "
          f"gap {m.gap_:.2e} (C tol = {C_mlr * tol_mlr:g}), converged {m.converged_}")
    mlr_fits[alpha] = m

# %%
# Plot
# ----
# Top: upper (primal) and lower bounds; bottom: the certified gap in the units of the stopping rule, with the
# tolerance. Kelley's method measures the objective at each restricted solution, which oscillates; the
# stabilised method queries points near the best one so far, and returns that best point.
fig, axes = plt.subplots(2, 2, figsize=(11, 7.5), sharex="col")
ax = axes[0, 0]
ax.semilogx(svm_k, h["objective"], "-", label="objective f(w_k)")
ax.semilogx(svm_k, np.minimum.accumulate(h["objective"]), "-", color="C0", alpha=0.4, label="best objective so far")
ax.semilogx(svm_k, h["lower_bound"], "-", color="C1", label="lower bound (restricted dual)")
ax.set_ylabel("objective")
ax.set_title(f"RankSVM, hinge loss, C = {C_svm} ({svm.n_pairs_} pairs)")
ax.legend()
ax = axes[1, 0]
ax.loglog(svm_k, h["gap"] / scale_svm, "-", label="certified gap / (C |P|)")
ax.axhline(tol_svm, color="k", linestyle=":", label=f"tol = {tol_svm:g}")
ax.set_xlabel("separations k")
ax.set_ylabel("gap / (C |P|)")
ax.legend()

for (alpha, m), color in zip(mlr_fits.items(), ("C2", "C3")):
    hm = m.history_
    k = np.arange(1, hm["objective"].size + 1)
    name = "Kelley (stabilization=0)" if alpha == 0 else f"in-out (stabilization={alpha})"
    axes[0, 1].semilogx(k, hm["objective"], "o-", markersize=3, color=color, label=f"{name}: objective")
    axes[0, 1].semilogx(k, hm["lower_bound"], "s--", markersize=3, color=color, label=f"{name}: lower bound")
    axes[1, 1].loglog(k, hm["gap"] / C_mlr, "o-", markersize=3, color=color, label=name)
axes[0, 1].set_ylabel("objective")
axes[0, 1].set_title(f"MLR (AUC, trace) on Wine, C = {C_mlr:g}")
axes[0, 1].legend(fontsize=8)
axes[1, 1].axhline(tol_mlr, color="k", linestyle=":", label=f"tol = {tol_mlr:g}")
axes[1, 1].set_xlabel("separation-oracle calls")
axes[1, 1].set_ylabel("gap / C")
axes[1, 1].legend(fontsize=8)
fig.tight_layout()
plt.show()
