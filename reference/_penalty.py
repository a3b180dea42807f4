"""The penalty convention of the reference objectives (the same as cyrank.optim.penalties, written independently):
lam1 ||w||_1 + lam2 ||w||_2^2 with (lam1, lam2) = (0, alpha) for "l2", (alpha, 0) for "l1" and
(alpha l1_ratio, alpha (1 - l1_ratio)) for "elasticnet" (the l2 term not halved)."""


def penalty_weights(penalty, alpha, l1_ratio):
    """(lam1, lam2) of the named penalty."""
    if penalty == "l2":
        return 0.0, alpha
    if penalty == "l1":
        return alpha, 0.0
    if penalty == "elasticnet":
        return alpha * l1_ratio, alpha * (1.0 - l1_ratio)
    raise ValueError(f"penalty must be 'l2', 'l1' or 'elasticnet', got {penalty!r}")
