"""Penalties shared by every smooth loss: l2, l1 and elastic net, as penalty objects in skglm's sense (Bertrand,
Klopfenstein, Massias et al., "Beyond L1: Faster and Better Sparse Models with skglm", NeurIPS 2022): each knows
its value, its proximal operator and its subdifferential distance (the stopping measure).

Convention (every objective of the package): with alpha >= 0 and l1_ratio in [0, 1],

    "l2":          alpha ||w||_2^2                 (not halved: Stevens, MIT thesis 2010, section 5)
    "l1":          alpha ||w||_1
    "elasticnet":  alpha (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||_2^2)

that is lam1 ||w||_1 + lam2 ||w||_2^2 with (lam1, lam2) = :func:`penalty_weights`. lam1 may be one weight per
coordinate (sum_r lam1_r |w_r|). The solvers fold the ridge lam2 ||w||^2 into the smooth part (gradient 2 lam2 w,
Hessian 2 lam2 I: :attr:`Penalty.ridge`, strong convexity 2 lam2) and treat lam1 ||w||_1 as the non-smooth part.
"""
import numpy as np

from .._validation import check_option, check_param

PENALTIES = ("l2", "l1", "elasticnet")


def penalty_weights(penalty, alpha, l1_ratio):
    """(lam1, lam2) of lam1 ||w||_1 + lam2 ||w||_2^2 for the named penalty (module docstring)."""
    check_option("penalty", penalty, PENALTIES)
    alpha = check_param("alpha", alpha, low=0.0)
    if penalty == "l1":
        return alpha, 0.0
    if penalty == "l2":
        return 0.0, alpha
    rho = check_param("l1_ratio", l1_ratio, low=0.0, high=1.0)
    return alpha * rho, alpha * (1.0 - rho)


def soft_threshold(z, t):
    """sign(z) max(|z| - t, 0), elementwise (t a number or a vector)."""
    return np.sign(z) * np.maximum(np.abs(z) - t, 0.0)


def kkt_excess(G, w, lam1, noise=0.0):
    """Per coordinate: dist(-G_r, lam1_r * subdifferential of |w_r|) beyond the gradient's rounding error
    ``noise``, G the gradient of the smooth part (ridge included) at w; 0 everywhere at the optimum."""
    dist = np.where(w > 0, np.abs(G + lam1), np.where(w < 0, np.abs(G - lam1), np.maximum(np.abs(G) - lam1, 0.0)))
    return np.maximum(dist - noise, 0.0)


def l1_change(w, s, lam1):
    """lam1 (||w + s||_1 - ||w||_1) without cancellation: lam1 sign(w_r) s_r where w_r + s_r keeps the sign of
    w_r != 0 (the difference of two nearly equal norms would lose every digit of a tiny step). ``lam1``: a number,
    or one weight per coordinate of w."""
    z = w + s
    same = (w != 0) & (np.sign(z) == np.sign(w))
    change = np.where(same, np.sign(w) * s, np.abs(z) - np.abs(w))
    if np.ndim(lam1) == 0:
        return lam1 * float(np.sum(change))
    return float(np.sum(lam1 * change))


class Penalty:
    """lam1 ||w||_1 + lam2 ||w||_2^2 (module docstring); :func:`make_penalty` builds it from the public names.

    Attributes
    ----------
    lam1 : float or ndarray
        Weight of the l1 term (one per coordinate allowed).
    lam2 : float
        Weight of ||w||_2^2 (not halved).
    """

    def __init__(self, lam1=0.0, lam2=0.0):
        if np.ndim(lam1) == 0:
            lam1 = float(lam1)
            if not (np.isfinite(lam1) and lam1 >= 0):
                raise ValueError(f"lam1 must be a finite number >= 0, got {lam1!r}")
        else:
            lam1 = np.ascontiguousarray(lam1, dtype=np.float64)
            if lam1.ndim != 1 or not np.all(np.isfinite(lam1) & (lam1 >= 0)):
                raise ValueError("lam1 must be a number or a 1-d array of finite weights >= 0 (one per coordinate)")
        lam2 = float(lam2)
        if not (np.isfinite(lam2) and lam2 >= 0):
            raise ValueError(f"lam2 must be a finite number >= 0, got {lam2!r}")
        self.lam1, self.lam2 = lam1, lam2

    def __repr__(self):
        return f"{type(self).__name__}(lam1={self.lam1!r}, lam2={self.lam2!r})"

    # -- what the solvers need -------------------------------------------------------------------------------
    @property
    def smooth(self):
        """True when there is no l1 term (the whole objective is smooth)."""
        return not np.any(self.lam1)

    @property
    def ridge(self):
        """lam2: the smooth part lam2 ||w||^2 the solvers add to the loss (gradient 2 lam2 w, Hessian 2 lam2 I)."""
        return self.lam2

    @property
    def strong_convexity(self):
        """2 lam2, the modulus mu of the penalty's strong convexity (the certificate's ||p||^2 / (2 mu))."""
        return 2.0 * self.lam2

    def value(self, w):
        """lam1 ||w||_1 + lam2 ||w||_2^2."""
        w = np.asarray(w, dtype=np.float64)
        return self.l1_value(w) + self.lam2 * float(w @ w)

    def l1_value(self, w):
        """lam1 ||w||_1, the non-smooth part."""
        if np.ndim(self.lam1) == 0:
            return self.lam1 * float(np.abs(w).sum())
        return float(np.sum(self.lam1 * np.abs(w)))

    def prox(self, w, step):
        """argmin_z ||z - w||^2 / (2 step) + lam1 ||z||_1 + lam2 ||z||^2 = soft(w, step lam1) / (1 + 2 step lam2)."""
        w = np.asarray(w, dtype=np.float64)
        return soft_threshold(w, step * self.lam1) / (1.0 + 2.0 * step * self.lam2)

    def prox_l1(self, w, step):
        """The proximal operator of the non-smooth part alone: soft(w, step lam1)."""
        return soft_threshold(np.asarray(w, dtype=np.float64), step * self.lam1)

    def subdiff_distance(self, grad, w, noise=0.0):
        """Per coordinate, dist(-grad_r, d(lam1 ||.||_1 + lam2 ||.||^2)(w)_r) with ``grad`` the gradient of the
        loss alone (the ridge is added here), beyond ``noise``: :func:`kkt_excess`."""
        return kkt_excess(np.asarray(grad) + 2.0 * self.lam2 * np.asarray(w), w, self.lam1, noise)

    def kkt_excess(self, G, w, noise=0.0):
        """:func:`kkt_excess` with G the gradient of the smooth part, ridge included (what the solvers hold)."""
        return kkt_excess(G, w, self.lam1, noise)

    def pseudo_gradient(self, G, w):
        """The minimum-norm subgradient of (smooth part) + lam1 ||w||_1, G the smooth part's gradient (Andrew & Gao
        2007, section 3.1); its absolute value is :meth:`kkt_excess` without noise."""
        from .certificate import pseudo_gradient

        return pseudo_gradient(G, w, self.lam1)

    def l1_change(self, w, s, coords=None):
        """lam1 (||w + s||_1 - ||w||_1) without cancellation (:func:`l1_change`); ``coords``: w and s hold only
        these coordinates (a working set) and a vector lam1 is taken there."""
        lam1 = self.lam1 if (np.ndim(self.lam1) == 0 or coords is None) else self.lam1[coords]
        return l1_change(w, s, lam1)


def L2(alpha):
    """alpha ||w||_2^2 (not halved)."""
    return Penalty(0.0, alpha)


def L1(alpha, weights=None):
    """alpha ||w||_1, or sum_r alpha weights_r |w_r| with per-coordinate ``weights``."""
    return Penalty(alpha if weights is None else alpha * np.asarray(weights, dtype=np.float64), 0.0)


def ElasticNet(alpha, l1_ratio):
    """alpha (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||_2^2)."""
    return Penalty(alpha * l1_ratio, alpha * (1.0 - l1_ratio))


def make_penalty(penalty, alpha, l1_ratio=0.5):
    """The :class:`Penalty` named ``penalty`` ("l2", "l1", "elasticnet") with ``alpha`` and ``l1_ratio``, checked."""
    return Penalty(*penalty_weights(penalty, alpha, l1_ratio))
