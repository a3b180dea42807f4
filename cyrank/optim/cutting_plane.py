"""The 1-slack cutting-plane method (Joachims 2006; McFee & Lanckriet, ICML 2010, Algorithm 1), written once for every structural
problem of the form

    min_w  f(w) = R(w) + C xi(w),   xi(w) = max(0, max_y Delta(y) - <w, Psi(y)>),

where <.,.> is the Frobenius inner product (w and Psi may be vectors or matrices). Only the most violated
constraint at a query point is ever computed (the separation oracle), and a restricted problem over the
working set of constraints found so far (the cutting-plane model of xi) is re-solved after each addition.

The caller supplies
    separate(w) -> (delta, psi)       the most violated constraint at w: argmax_y Delta(y) - <w, Psi(y)>
    solve_restricted(ws) -> (w, xi, n_inner, lower, weights)
                                      min_w R(w) + C xi over the constraints of the :class:`WorkingSet` ws
                                      (its own warm start, e.g. ws.weights); n_inner its inner iterations, lower
                                      a lower bound on the restricted optimum (e.g. its dual value; -inf if none)
                                      and weights the dual weight of each constraint (0 = inactive)
    regularizer(w) -> R(w)
and optionally the WorkingSet itself (to keep a Gram matrix or companion rows beside the constraints, or to set
the aging). The one aging rule: a constraint whose dual weight is zero in ``patience`` consecutive restricted
solves leaves the working set (the oracle finds it again if it matters); dropping constraints relaxes the
restricted problem, so its dual value stays a lower bound of the optimum.

Every separation call measures f exactly at its query point: xi(w) = max(0, Delta - <w, Psi>).

``stabilize = 0`` (default): Kelley's method, as in McFee & Lanckriet's Algorithm 1. The query point is the restricted solution w_k;
stop when the new constraint is violated by at most ``epsilon`` more than the working set allows,
Delta - <w_k, Psi> <= xi_k + epsilon. Then f(w_k) exceeds the restricted objective (a lower bound on the optimum
when the restricted problem is solved exactly) by at most C * epsilon. When ``solve_restricted`` returns a lower
bound L, the stop also requires the certified gap f(w_k) - L <= C * epsilon, so that an inexact restricted
solve (badly scaled data: large C |x|^2) never passes for a certified one.

``stabilize = alpha`` in (0, 1): in-out separation (Ben-Ameur & Neto 2007), which damps Kelley's
oscillation. With c the best point so far (the stability centre, f(c) = min of the measured f), the query point
is z = alpha c + (1 - alpha) w_k. If its constraint does not cut off w_k (Delta - <w_k, Psi> <= xi_k), then
f(z) <= alpha f(c) + (1 - alpha) P_k (R convex, the constraint linear; P_k the restricted objective at w_k), so
the centre still improves, and the next query point is w_k itself (a Kelley step; should that one not cut w_k
either, its constraint is added all the same and the restricted problem re-solved, as Kelley's method would, instead
of measuring w_k again). The method stops when the
certified gap f(c) - L <= C * epsilon, L the best lower bound returned by ``solve_restricted`` (required
here), and returns c.
"""
import numpy as np

from .result import OptimResult


class WorkingSet:
    """The constraints (Delta_t, Psi_t) of the restricted problem in growing arrays (never restacked), with
    optional companions: ``gram(psi, ws)`` -> [<psi_t, psi> for the stored t] + [<psi, psi>] keeps their Gram
    matrix G (any inner product: RankSVM's kernel model uses Q), ``companion(psi)`` a second row per constraint.
    ``weights`` holds the last dual weights (a warm start), ``idle`` the consecutive solves each constraint had
    zero weight; ``patience`` (None: never) drops constraints idle that long, never the newest."""

    def __init__(self, shape, *, gram=None, companion=None, patience=None):
        self.shape = (int(shape),) if np.ndim(shape) == 0 else tuple(int(n) for n in shape)
        self.size = int(np.prod(self.shape))
        self.gram, self.companion, self.patience = gram, companion, patience
        self.K = 0
        self._rows = np.empty((8, self.size))
        self._extra = np.empty((8, self.size)) if companion is not None else None
        self._G = np.empty((8, 8)) if gram is not None else None
        self._delta = np.empty(8)
        self._weights = np.zeros(8)
        self._idle = np.zeros(8, dtype=np.int64)

    # -- views of the K stored constraints
    @property
    def deltas(self):
        return self._delta[: self.K]

    @property
    def flat(self):
        return self._rows[: self.K]

    @property
    def psis(self):
        return self._rows[: self.K].reshape((self.K,) + self.shape)

    @property
    def extra(self):
        return self._extra[: self.K]

    @property
    def G(self):
        return self._G[: self.K, : self.K]

    @property
    def weights(self):
        return self._weights[: self.K]

    @property
    def idle(self):
        return self._idle[: self.K]

    def add(self, delta, psi):
        """Store a new constraint (its Gram row and companion computed here); its weight starts at 0."""
        psi = np.asarray(psi, dtype=np.float64).reshape(-1)
        k = self.K
        if k == self._rows.shape[0]:
            self._grow(2 * k)
        if self._G is not None:
            row = self.gram(psi, self)
            self._G[k, : k + 1] = row
            self._G[: k + 1, k] = row
        if self._extra is not None:
            self._extra[k] = self.companion(psi)
        self._rows[k] = psi
        self._delta[k], self._weights[k], self._idle[k] = delta, 0.0, 0
        self.K += 1

    def _grow(self, cap):
        k = self.K
        for name in ("_rows", "_extra"):
            old = getattr(self, name)
            if old is not None:
                new = np.empty((cap, old.shape[1]))
                new[:k] = old[:k]
                setattr(self, name, new)
        if self._G is not None:
            G = np.empty((cap, cap))
            G[:k, :k] = self._G[:k, :k]
            self._G = G
        for name in ("_delta", "_weights", "_idle"):
            old = getattr(self, name)
            new = np.zeros(cap, dtype=old.dtype)
            new[:k] = old[:k]
            setattr(self, name, new)

    def record(self, weights):
        """The dual weights of the last restricted solve; a constraint with weight exactly 0 was idle (a restricted
        solver whose weights are never exactly 0, as an interior-point method's, zeroes the inactive ones)."""
        w = np.asarray(weights, dtype=np.float64)
        self._weights[: self.K] = w
        self._idle[: self.K] = np.where(w > 0, 0, self._idle[: self.K] + 1)

    def retire(self):
        """Drop the constraints idle for ``patience`` solves (never the newest)."""
        K = self.K
        if self.patience is None or K == 0:
            return
        keep = self._idle[:K] < self.patience
        keep[K - 1] = True
        if keep.all():
            return
        idx = np.flatnonzero(keep)
        n = idx.size
        self._rows[:n] = self._rows[idx]
        if self._extra is not None:
            self._extra[:n] = self._extra[idx]
        if self._G is not None:
            self._G[:n, :n] = self._G[np.ix_(idx, idx)]
        for name in ("_delta", "_weights", "_idle"):
            arr = getattr(self, name)
            arr[:n] = arr[idx]
        self.K = n


def cutting_plane_history(result):
    """The per-separation record of a :func:`cutting_plane` result as the estimators' ``history_``: float64 arrays
    "objective" (at the point separated), "lower_bound" (the best restricted dual value so far; 0 before the first:
    every objective minimised here, a non-negative regulariser plus C xi with xi >= 0, is non-negative) and "gap",
    the certified gap the stopping rule tests (objective - lower_bound; in-out: the best objective so far minus
    lower_bound)."""
    objective = np.asarray(result.history["objective"], dtype=np.float64)
    lower = np.asarray(result.history["lower_bound"], dtype=np.float64)
    gap = np.asarray(result.history["gap"], dtype=np.float64)
    before = ~np.isfinite(lower)
    return {"objective": objective, "lower_bound": np.where(before, 0.0, lower),
            "gap": np.where(before, objective, gap)}


def _inner(w, psi):
    return float(np.vdot(np.ravel(w), np.ravel(psi)))


def _model_slack(w, ws):
    """Slack of the working set at w: max(0, max_t Delta_t - <w, Psi_t>)."""
    if ws.K == 0:
        return 0.0
    return max(0.0, float(np.max(ws.deltas - ws.flat @ np.ravel(w))))


def cutting_plane(separate, solve_restricted, regularizer, w0, *, C, epsilon, max_iter, verbose=0,
                  stabilize=0.0, working_set=None, gap_tol=None):
    """Run the 1-slack cutting-plane method from ``w0``; see the module docstring for the contract.
    ``max_iter`` bounds the constraints added (Kelley) or the separation calls (in-out). ``working_set``: the
    :class:`WorkingSet` to fill (default: a plain one of w0's shape, never aged). ``gap_tol``: convergence also
    needs the certified duality gap objective - lower bound <= gap_tol * max(1, objective) (a relative bound on
    objective - optimum, whatever the scale of the data). Returns a :class:`cyrank.optim.result.OptimResult`
    (optimality: the constraint violation; gap: the duality gap; info: xi, xi_restricted, lower_bound,
    n_separations)."""
    if not 0.0 <= stabilize < 1.0:
        raise ValueError(f"stabilize must be in [0, 1), got {stabilize!r}")
    w = np.array(w0, dtype=np.float64, copy=True)
    ws = working_set if working_set is not None else WorkingSet(w.shape)
    n_added, n_inner, n_sep, lower = 0, 0, 0, -np.inf
    history = {"objective": [], "xi": [], "violation": [], "lower_bound": [], "gap": []}

    def measure(w):
        nonlocal n_sep
        delta, psi = separate(w)
        n_sep += 1
        xi = max(0.0, float(delta) - _inner(w, psi))
        return float(delta), psi, xi, float(regularizer(w)) + C * xi

    def add(delta, psi):
        nonlocal n_added
        ws.retire()
        ws.add(delta, psi)
        n_added += 1

    def restrict():
        nonlocal n_inner, lower
        w_new, xi, k, low, weights = solve_restricted(ws)
        n_inner += int(k)
        lower = max(lower, float(low))
        ws.record(weights)
        return w_new, float(xi)

    def record(objective, xi, violation, gap):
        history["objective"].append(objective)
        history["xi"].append(xi)
        history["violation"].append(violation)
        history["lower_bound"].append(lower)
        history["gap"].append(gap)
        if verbose:
            print(f"cutting plane {n_sep:4d}: objective {objective:.10g}  xi {xi:.6g}  violation {violation:.3g}"
                  f"  gap {gap:.3g}  working set {ws.K}")

    def gap_ok(objective):
        """objective - lower <= C epsilon and, with gap_tol, <= gap_tol * max(1, |objective|)."""
        gap = objective - lower
        return gap <= C * epsilon and (gap_tol is None or gap <= gap_tol * max(1.0, abs(objective)))

    def certified(objective):
        """Kelley's gap test: gap_ok, or no lower bound returned (lower = -inf) and no gap_tol to meet."""
        return (lower == -np.inf and gap_tol is None) or gap_ok(objective)

    converged = False
    if stabilize == 0.0:
        xi_restricted = 0.0
        for _ in range(max_iter):
            delta, psi, xi, objective = measure(w)
            violation = xi - xi_restricted
            record(objective, xi, violation, objective - lower)
            if violation <= epsilon and certified(objective):
                converged = True
                break
            add(delta, psi)
            w, xi_restricted = restrict()
        else:
            # max_iter constraints were added: measure the final w honestly, and test it as any iterate
            delta, psi, xi, objective = measure(w)
            violation = xi - xi_restricted
            record(objective, xi, violation, objective - lower)
            converged = violation <= epsilon and certified(objective)
    else:
        centre, model, xi_model, z = None, None, 0.0, w
        for _ in range(max_iter):
            delta, psi, xi, objective = measure(z)
            if centre is None or objective < f_centre:
                centre, f_centre, xi_centre = z, objective, xi
            record(objective, xi, xi - _model_slack(z, ws), f_centre - lower)
            if gap_ok(f_centre):
                converged = True
                break
            if model is None or delta - _inner(model, psi) > xi_model or z is model:
                # (z is model: a Kelley step whose constraint does not cut the model either would repeat forever;
                # its constraint is added anyway, as Kelley's method does, and the restricted problem re-solved)
                add(delta, psi)
                model, xi_model = restrict()
                z = stabilize * centre + (1.0 - stabilize) * model
            else:                                                   # no cut at the model: a Kelley step
                z = model
        w, objective, xi = centre, f_centre, xi_centre
        xi_restricted = _model_slack(w, ws)
        violation = (objective - lower) / C
    if not converged:
        what = "constraints with violation" if stabilize == 0.0 else "separations with gap / C"
        certificate = (f" and certified gap / C {(objective - lower) / C:.3g}"
                       if stabilize == 0.0 and lower > -np.inf else "")
        relative = (f" (relative gap {(objective - lower) / max(1.0, abs(objective)):.3g}, gap_tol={gap_tol:g})"
                    if gap_tol is not None else "")
        message = (f"cutting plane stopped after max_iter={max_iter} {what} {violation:.3g}{certificate}{relative}"
                   f" > epsilon={epsilon:g}; increase max_iter or epsilon")
    else:
        message = ""
    return OptimResult(
        x=w, objective=objective, n_iter=n_added, converged=converged, optimality=float(violation),
        optimality_name="constraint violation", gap=objective - lower if lower > -np.inf else np.inf,
        gap_kind="duality gap" if lower > -np.inf else "", message=message, n_fun=n_sep, n_inner=n_inner,
        history=history,
        info={"xi": xi, "xi_restricted": float(xi_restricted), "lower_bound": float(lower), "n_separations": n_sep},
    )
