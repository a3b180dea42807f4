"""What every functional solver returns (the layer under the estimators: validated arrays in, numbers out).

A :class:`SolveResult` holds the fitted values under the names the estimator gives them without the trailing
underscore (``coef``, ``objective``, ``n_iter``, ``converged`` and the family's own: ``kkt_violation``,
``grad_norm``, ``duality_gap``, ``W``, ...; ``gap``, a bound or estimate of objective - optimum, None when not
measured, and ``gap_kind``, its name: cyrank.optim.result), the name of the family's optimality measure, and
``message``: why the solver stopped short ("" when it converged). This layer never warns about convergence and
imports no scikit-learn; the estimators turn ``message`` into sklearn's ConvergenceWarning, the command line prints
it.
"""
import math


class SolveResult:
    """Fitted values as attributes; ``optimality`` is the value of the measure named ``optimality_name``."""

    def __init__(self, *, optimality_name, message="", **values):
        missing = {"objective", "n_iter", "converged", optimality_name} - set(values)
        if missing:
            raise TypeError(f"SolveResult needs {', '.join(sorted(missing))}")
        self.optimality_name = optimality_name
        self.message = message
        if "gap" in values and values["gap"] is not None and not math.isfinite(values["gap"]):
            values["gap"] = None  # not measured
        self._names = tuple(values)
        self.__dict__.update(values)

    @property
    def optimality(self):
        return getattr(self, self.optimality_name)

    def fitted_attributes(self):
        """{name + "_": value}: the estimator attributes this result sets."""
        return {name + "_": getattr(self, name) for name in self._names}

    def __repr__(self):
        state = "converged" if self.converged else f"not converged: {self.message}"
        return (f"SolveResult(objective={self.objective:.10g}, {self.optimality_name}={self.optimality:.3g}, "
                f"n_iter={self.n_iter}, {state})")
