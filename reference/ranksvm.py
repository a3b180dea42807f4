"""Exact rankSVM optimum with cvxpy (Kuo, Lee & Lin, SDM 2014, (1.2), (3.12), (3.13)).

Preference pairs P = {(i, j): qid_i = qid_j, y_i > y_j} are enumerated explicitly (plain loops), one slack per
pair:

    linear   min_{w, xi}  R(w) + C sum_P s_i loss(xi_ij)    s.t.  xi_ij >= 1 - w'(x_i - x_j),  xi_ij >= 0
    kernel   min_beta     beta'Q beta / 2 + C sum_P s_i loss(1 - (Q beta)_i + (Q beta)_j)

with s = ``sample_weight`` (default all 1): each pair weighs its preferred row i's weight (Joachims, Swaminathan &
Schnabel, WSDM 2017); pairs of weight 0 are left out of the problem.

with loss(xi) = xi^2 ("squared_hinge") or xi ("hinge"), and R(w) (``penalty``, linear squared hinge only for
the last two) w'w / 2 ("l2"), ||w||_1 ("l1": the L1-regularised L2-loss SVM of LIBLINEAR, Fan et al., JMLR 2008)
or l1_ratio ||w||_1 + (1 - l1_ratio) w'w / 2 ("elasticnet"). The kernel problem is solved through a factor
Q = L L' (eigendecomposition, eigenvalues below 1e-12 of the largest dropped): with u = L' beta it is the
linear problem on the rows of L, and beta is recovered by the pseudo-inverse. Kernels: linear x'x',
rbf exp(-gamma ||x - x'||^2), poly (gamma x'x' + coef0)^degree, precomputed (X is Q). gamma "scale" =
1 / (n_features * X.var()), "auto" = 1 / n_features. Written independently of cyrank, for a few hundred pairs.
"""
import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from ._solve import feature_scale_vector, solve_problem, unscale


def _dense(X):
    return np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)


def preference_pairs(y, qid=None):
    """Arrays (I, J) of every pair with the same qid and y[I] > y[J]."""
    y = np.asarray(y, dtype=np.float64)
    qid = np.zeros(y.shape[0], np.int64) if qid is None else np.asarray(qid)
    I, J = [], []
    for i in range(y.shape[0]):
        for j in range(y.shape[0]):
            if qid[i] == qid[j] and y[i] > y[j]:
                I.append(i)
                J.append(j)
    return np.array(I, dtype=np.int64), np.array(J, dtype=np.int64)


def resolve_gamma(gamma, X, sample_weight=None):
    """"auto": 1 / n_features; "scale": 1 / (n_features * variance of X's entries), each row counted
    sample_weight[i] times (None: once); a number: itself."""
    X = _dense(X)
    if gamma == "auto":
        return 1.0 / X.shape[1]
    if gamma == "scale":
        rows = np.ones(X.shape[0]) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        entry_weight = np.repeat(rows, X.shape[1])
        var = np.cov(X.ravel(), aweights=entry_weight, bias=True) if rows.any() else 0.0
        return 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    return float(gamma)


def kernel_matrix(A, B, kernel="linear", gamma=1.0, degree=3, coef0=1.0):
    """K(A, B) by its definition, row by row."""
    A, B = _dense(A), _dense(B)
    K = np.empty((A.shape[0], B.shape[0]))
    for i, a in enumerate(A):
        if kernel == "linear":
            K[i] = B @ a
        elif kernel == "rbf":
            K[i] = np.exp(-gamma * ((B - a) ** 2).sum(axis=1))
        elif kernel == "poly":
            K[i] = (gamma * (B @ a) + coef0) ** degree
        else:
            raise ValueError(f"unknown kernel {kernel!r}")
    return K


def pair_weights(sample_weight, I):
    """The weight of each pair (I, J): sample_weight[I] (all 1 when sample_weight is None)."""
    if sample_weight is None:
        return np.ones(I.shape[0])
    return np.asarray(sample_weight, dtype=np.float64)[I]


def _loss(t, loss, weights):
    t = np.maximum(t, 0.0)
    return float(weights @ (t * t) if loss == "squared_hinge" else weights @ t)


def _weights(penalty, l1_ratio, loss="squared_hinge", kernel="linear"):
    """(a, b) of R(w) = a ||w||_1 + b w'w (module docstring)."""
    if penalty == "l2":
        return 0.0, 0.5
    if penalty not in ("l1", "elasticnet"):
        raise ValueError(f"penalty must be 'l2', 'l1' or 'elasticnet', got {penalty!r}")
    if kernel != "linear" or loss != "squared_hinge":
        raise ValueError(f"penalty={penalty!r} is for the linear squared-hinge model only")
    if penalty == "l1":
        return 1.0, 0.0
    if not 0.0 <= l1_ratio <= 1.0:
        raise ValueError(f"l1_ratio must be in [0, 1], got {l1_ratio!r}")
    return float(l1_ratio), 0.5 * (1.0 - l1_ratio)


def objective(X, y, qid=None, w=None, *, beta=None, C=1.0, loss="squared_hinge", kernel="linear", gamma="scale",
              degree=3, coef0=1.0, penalty="l2", l1_ratio=0.5, sample_weight=None):
    """The objective at ``w`` (linear, X features) or at ``beta`` (kernel; Q = K(X, X)), by enumerating pairs."""
    I, J = preference_pairs(y, qid)
    pw = pair_weights(sample_weight, I)
    if beta is None:
        X = _dense(X)
        w = np.asarray(w, dtype=np.float64)
        f = X @ w
        a, b = _weights(penalty, l1_ratio, loss)
        return a * float(np.abs(w).sum()) + b * float(w @ w) + C * _loss(1.0 - (f[I] - f[J]), loss, pw)
    Q = _dense(X) if kernel == "precomputed" else kernel_matrix(X, X, kernel, resolve_gamma(gamma, X, sample_weight),
                                                                degree, coef0)
    f = Q @ beta
    return 0.5 * float(beta @ f) + C * _loss(1.0 - (f[I] - f[J]), loss, pw)


def _solve_linear(F, I, J, C, loss, scale=None, weights=(0.0, 0.5), pair_weight=None, **solver_options):
    """min a ||u||_1 + b u'u + C sum_k p_k loss(xi_k), xi >= 1 - (F u)_I + (F u)_J, xi >= 0 (one slack per pair),
    (a, b) = ``weights``, p = ``pair_weight`` (> 0; None: all 1); with ``scale`` s the regulariser is taken at
    u / s instead."""
    u = cp.Variable(F.shape[1])
    xi = cp.Variable(I.shape[0])
    D = F[I] - F[J]
    p = np.ones(I.shape[0]) if pair_weight is None else pair_weight
    if loss == "squared_hinge":
        penalty = cp.sum_squares(cp.multiply(np.sqrt(p), xi))
    else:
        penalty = p @ xi
    u_reg = u if scale is None else cp.multiply(1.0 / scale, u)
    a, b = weights
    reg = 0.0
    if a > 0:
        reg = reg + a * cp.norm1(u_reg)
    if b > 0:
        reg = reg + b * cp.sum_squares(u_reg)
    problem = cp.Problem(cp.Minimize(reg + C * penalty), [xi >= 1 - D @ u, xi >= 0])
    return solve_problem(problem, {"u": u, "xi": xi}, **solver_options)


def solve(X, y, qid=None, C=1.0, loss="squared_hinge", kernel="linear", gamma="scale", degree=3, coef0=1.0,
          feature_scale=None, penalty="l2", l1_ratio=0.5, sample_weight=None, **solver_options):
    """Exact minimiser; a :class:`reference.Solution` with variable "w" (linear) or "beta" (other kernels).
    ``sample_weight``: one weight >= 0 per row (module docstring), None: all 1; "xi" then holds the slacks of
    the pairs of positive weight only.

    ``feature_scale`` (linear kernel only): positive vector s (n_features); cvxpy then solves the same problem in
    v = s * w on the columns X / s (regulariser R(v / s)), for columns on far-off scales; "w" is v / s.
    ``penalty``, ``l1_ratio``: the regulariser R (module docstring)."""
    if loss not in ("squared_hinge", "hinge"):
        raise ValueError(f"unknown loss {loss!r}")
    weights = _weights(penalty, l1_ratio, loss, kernel)
    I, J = preference_pairs(y, qid)
    pw = pair_weights(sample_weight, I)
    if np.any(pw < 0) or not np.all(np.isfinite(pw)):
        raise ValueError("sample_weight must be finite and >= 0")
    keep = pw > 0
    I, J, pw = I[keep], J[keep], pw[keep]
    if I.size == 0:
        raise ValueError("no preference pair (of positive weight)")
    if feature_scale is not None and kernel != "linear":
        raise ValueError("feature_scale is for the linear kernel only")
    if kernel == "linear":
        F = _dense(X)
        s = feature_scale_vector(feature_scale, F.shape[1])
        sol = _solve_linear(F if s is None else F / s, I, J, C, loss, scale=s, weights=weights, pair_weight=pw,
                            **solver_options)
        sol.variables = {"w": sol.variables["u"], "xi": sol.variables["xi"]}
        return unscale(sol, s, "w")
    if kernel == "precomputed":
        Q = _dense(X)
    else:
        Q = kernel_matrix(X, X, kernel, resolve_gamma(gamma, X, sample_weight), degree, coef0)
    Q = 0.5 * (Q + Q.T)
    lam, V = np.linalg.eigh(Q)
    keep = lam > 1e-12 * max(lam.max(), 0.0)
    L = V[:, keep] * np.sqrt(lam[keep])
    sol = _solve_linear(L, I, J, C, loss, pair_weight=pw, **solver_options)
    u = sol.variables["u"]
    beta = V[:, keep] @ (u / np.sqrt(lam[keep]))
    sol.variables = {"beta": beta, "xi": sol.variables["xi"]}
    return sol
