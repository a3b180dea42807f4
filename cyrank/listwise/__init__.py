"""Listwise ranking (issue 31): ListNet / softmax cross-entropy (Cao et al., ICML 2007; Bruch et al., ICTIR 2019)
and ListMLE (Xia et al., ICML 2008; Efron's or Breslow's ties), linear, convex, solved exactly (solver.py: the
functional layer, no scikit-learn import); ``doc_gradients`` / ``DocGradients`` give the per-row gradients and
Hessian diagonals for tree learners. The estimators ``ListNet`` and ``ListMLE`` are imported on first use."""
from .solver import (DocGradients, ListwiseLoss, check_params, doc_gradients, loss, objective, solve, solve_listmle,
                     solve_listnet)


def __getattr__(name):
    if name in ("ListNet", "ListMLE"):
        from . import estimator

        return getattr(estimator, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["DocGradients", "ListMLE", "ListNet", "ListwiseLoss", "check_params", "doc_gradients", "loss",
           "objective", "solve", "solve_listmle", "solve_listnet"]
