"""The contract between :func:`cyrank.optim.tron.tron` and the problems it minimises, written once.

A problem is a convex, once-differentiable f whose (generalised) Hessian is known only through products, in the
inner product <a, b> = a'Mb (M = I unless the problem overrides :meth:`SmoothProblem.metric`). TRON evaluates f at
trial points it may reject; the Hessian products must use the state of the last accepted point. This base class
owns that trial/commit protocol (as LIBLINEAR's ``function`` class in ``newton.h`` owns fun / grad / Hv): a
subclass only says how to evaluate a point into a state and how to multiply by the Hessian held in a state.
"""
from abc import ABC, abstractmethod


class SmoothProblem(ABC):
    """Base of every problem :func:`~cyrank.optim.tron.tron` minimises.

    Subclasses implement

        new_state()                       -> an empty state (what a Hessian product needs at a point)
        evaluate(x, Mx, state)            -> (f(x), gradient at x); fills ``state`` for x
        hessian_product(state, v, Mv)     -> Hessian at the state's point times v

    gradients and Hessian products being the representatives in the problem's inner product (M g is the usual
    gradient), and may override ``metric(v) -> M v`` (default: the identity, a'b).

    Protocol, for TRON: ``fun(x, Mx)`` evaluates x into a trial state; ``grad(x)`` commits the trial state if it
    was computed at this very x (else evaluates x first) and returns the gradient; ``hess_vec(v, Mv)`` uses the
    committed state. So a rejected trial point never changes the Hessian.
    """

    def __init__(self):
        self._current = self.new_state()
        self._trial = self.new_state()
        self._trial_x = None
        self._trial_grad = None

    # -- to implement --------------------------------------------------------------------------------------
    @abstractmethod
    def new_state(self):
        """An empty state: what a Hessian product needs at a point."""

    @abstractmethod
    def evaluate(self, x, Mx, state):
        """(f(x), gradient at x), filling ``state`` for x."""

    @abstractmethod
    def hessian_product(self, state, v, Mv):
        """The Hessian at the state's point times v."""

    def metric(self, v):
        """M v; the identity unless a subclass defines another inner product."""
        return v

    # -- the protocol TRON calls -----------------------------------------------------------------------------
    def fun(self, x, Mx=None):
        f, g = self.evaluate(x, self.metric(x) if Mx is None else Mx, self._trial)
        self._trial_x, self._trial_grad = x, g
        return f

    def grad(self, x):
        if self._trial_x is not x:
            self.fun(x)
        self._current, self._trial = self._trial, self._current
        self._trial_x = None
        return self._trial_grad

    def hess_vec(self, v, Mv=None):
        return self.hessian_product(self._current, v, self.metric(v) if Mv is None else Mv)

    def adopt(self, other):
        """Take over the committed state of ``other``, a wrapper evaluating this problem (tron's _Scaled)."""
        self._current = other._current
        self._trial_x = None

    @property
    def state(self):
        """The committed state: that of the point of the last ``grad`` call."""
        return self._current
