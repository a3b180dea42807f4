"""LabelRankBoost: the scikit-learn estimator of log-linear label ranking over preference graphs (Dekel, Manning &
Singer, NIPS 2003). The objective and the solvers are in solver.py, the functional layer this estimator wraps.
"""
import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from .._base import SolverEstimator, check_predict_X
from .._validation import check_class_labels, check_joint_features, check_sample_weight
from . import solver
from .graphs import PreferenceGraphs


class LabelRankBoost(SolverEstimator):
    """Label ranking with label-specific linear scores f(x, y) = coef_[y] . x (plus, with joint features
    joint[i, y] of p values, theta . joint[i, y] with one shared theta = ``joint_coef_``), learnt from preference
    graphs.

    Objective (Dekel, Manning & Singer 2003, section 3; natural log)::

        sum_i (w_i/s_i) sum_k log(1 + sum_{e in E_ik} exp(f(x_i, term e) - f(x_i, init e))) + penalty(w)

    over the subgraphs E_i1 .. E_is_i of each instance's preference graph under ``decomposition``, w every
    parameter (coef and theta), w_i the instance weights of ``fit(..., sample_weight=)`` (1 without them; an
    integer w_i counts instance i exactly w_i times, 0 leaves it out). penalty: alpha ||w||_2^2 ("l2", not
    halved), alpha ||w||_1 ("l1") or alpha (l1_ratio ||w||_1 + (1 - l1_ratio) ||w||_2^2) ("elasticnet"), as every
    cyrank estimator's.

    Parameters
    ----------
    decomposition : {"domination", "zero_one", "disagreement", "dominated"} or callable, default="domination"
        How each graph is split into subgraphs (section 2; the paper found "domination" best on every error). A
        callable ``f(init, term, n_labels) -> list of arrays of edge positions`` defines your own.
    solver : {"auto", "boost", "newton"}, default="auto"
        "boost": the parallel boosting update of Fig. 3 (first order; many iterations; smooth penalties only).
        "newton": trust-region Newton-CG with exact Hessian products, or with an l1 term proximal Newton with
        working sets (Yuan, Ho & Lin, JMLR 2012). "auto": "newton".
    alpha : float >= 0, default=0.0
        Penalty weight. With alpha = 0 (the paper's loss) the optimum can be at infinity (separable data, or a
        label never preferred to another): use alpha > 0 then (any penalty makes the optimum finite). When the fit
        sees it (the coefficients order every edge, or a boosting base function meets edges of one sign only),
        converged_ is False and a ConvergenceWarning says so.
    penalty : {"l2", "l1", "elasticnet"}, default="l2"
    l1_ratio : float in [0, 1], default=0.5
        Share of the l1 term for "elasticnet".
    max_iter : int >= 1, default=1000
        Newton iterations or boosting rounds; ConvergenceWarning when reached.
    tol : float > 0, default=1e-6
        Stop when the objective is within tol * max(1, |objective|) of the optimum; "boost" and an l1 term also
        need ||grad|| <= tol ||grad at coef = 0|| (``grad_norm_``; with an l1 term the KKT violation
        max_r |p_r| / max_r |grad_r at 0|, p the minimum-norm subgradient). The gap ``gap_`` is ||p||^2 / (2 mu),
        mu = 2 alpha (1 - l1_ratio) for "elasticnet" and 2 alpha for "l2", certified, or the Newton decrement.
        "newton" runs preconditioned by the feature scales when they are far apart; "boost" is slow on
        unnormalised features and then says so.
    verbose : int, default=0

    Attributes
    ----------
    coef_ : ndarray of shape (n_labels, n_features)
    joint_coef_ : ndarray of shape (n_joint_features,) or None
        None when fitted without joint features.
    objective_ : float
    grad_norm_ : float
        Relative: ||grad|| / ||grad at coef = 0|| (with an l1 term: the relative KKT violation, see ``tol``).
    n_iter_ : int
    n_cg_iter_ : int
        Hessian products of "newton" (with an l1 term: the inner sweeps of proximal Newton's model).
    converged_ : bool
    solver_ : str
    n_labels_, n_features_in_ : int
    gap_, gap_kind_ : float or None, str
        objective_ minus the optimum and how it is known (cyrank.optim.result: certified "strong convexity" or
        "duality gap", or the "newton decrement" estimate, invariant to rescaling a feature); None: not measured.
    classes_ : ndarray of shape (n_labels,)
        Only after a fit on class labels.
    """

    _model_schema = {
        "n_features_in_": "int>=1", "coef_": "float[L, d]", "n_labels_": "int>=1", "objective_": "float",
        "gap_": "float>=0|None", "gap_kind_": "str",
        "grad_norm_": "float>=0", "n_iter_": "int>=0", "n_cg_iter_": "int>=0", "converged_": "bool", "solver_": "str",
        "classes_": "any[L]?", "joint_coef_": "float[*]|None",
    }

    @staticmethod
    def _check_model_attributes(values):
        """What the schema cannot state (cyrank.io.load_model): n_labels_ = the rows of coef_, classes_ sorted and
        distinct (class labels are looked up in it), joint_coef_ with at least one weight."""
        L = values["coef_"].shape[0]
        if values["n_labels_"] != L:
            raise ValueError(f"n_labels_ = {values['n_labels_']} but coef_ has {L} rows, one per label")
        classes = values.get("classes_")
        if classes is not None and (L < 2 or np.any(classes[1:] <= classes[:-1])):
            raise ValueError("classes_ must hold at least 2 sorted, distinct class labels, one per row of coef_")
        joint_coef = values.get("joint_coef_")
        if joint_coef is not None and joint_coef.size == 0:
            raise ValueError("joint_coef_ is empty; a model fitted with joint features has one weight per joint "
                             "feature (a model without them stores None)")

    def __init__(self, decomposition="domination", solver="auto", alpha=0.0, penalty="l2", l1_ratio=0.5,
                 max_iter=1000, tol=1e-6, verbose=0):
        self.decomposition = decomposition
        self.solver = solver
        self.alpha = alpha
        self.penalty = penalty
        self.l1_ratio = l1_ratio
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose

    # the functional layer (cyrank._base.SolverEstimator)
    _solve = solver.solve
    _check = solver.check_params
    _stale_attributes = ("classes_",)  # classes_ only when fitted on class labels

    def fit(self, X, y, joint=None, sample_weight=None):
        """Fit on X (n_instances x n_features, dense or sparse) and y: PreferenceGraphs with one graph per row of
        X, a multilabel indicator matrix (n_instances x n_labels; relevant labels preferred to the others), or
        1-d class labels (any values; labels are then the sorted classes, ``classes_``, and each instance's class
        is preferred to every other, Fig. 1a). ``joint``: optional joint features, (n_instances, n_labels, p).
        ``sample_weight``: optional instance weights w_i >= 0 (n_instances; a number: the same for all), the w_i
        of the objective (class docstring)."""
        if not self._is_class_vector(y):
            return self._fit(X, y, joint=joint, sample_weight=sample_weight)
        shape = X.shape if hasattr(X, "shape") else np.asarray(X).shape  # array-likes without numpy's dispatch too
        classes, index = check_class_labels(np.asarray(y).ravel(), shape[0] if len(shape) == 2 else None,
                                            who="LabelRankBoost")
        self._fit(X, PreferenceGraphs.from_classes(index, classes.size), joint=joint, sample_weight=sample_weight)
        self.classes_ = classes
        return self

    @staticmethod
    def _is_class_vector(G):
        """1-d labels, or a single column of them (scikit-learn's column-vector y)."""
        if isinstance(G, PreferenceGraphs) or sp.issparse(G):
            return False
        shape = np.asarray(G).shape
        return len(shape) == 1 or (len(shape) == 2 and shape[1] == 1)

    def _graphs(self, G, n):
        """G as graphs for scoring: class labels through ``classes_`` (an unseen class is an error)."""
        if not self._is_class_vector(G):
            return G
        if not hasattr(self, "classes_"):
            raise ValueError("this LabelRankBoost was fitted on preference graphs or an indicator matrix; score it "
                             "on the same kind of targets, not on class labels")
        G = np.ravel(G)
        index = np.searchsorted(self.classes_, G)
        if G.shape[0] != n or np.any(index >= self.classes_.size) or np.any(self.classes_[np.minimum(
                index, self.classes_.size - 1)] != G):
            raise ValueError("y holds labels not seen in fit, or its length differs from the rows of X")
        return PreferenceGraphs.from_classes(index, self.classes_.size)

    def decision_function(self, X, joint=None):
        """Label scores f(x, y) = coef_[y] . x (+ joint_coef_ . joint[i, y]), shape (n_instances, n_labels)."""
        X = check_predict_X(self, X)
        scores = np.asarray(X @ self.coef_.T, dtype=np.float64)
        if self.joint_coef_ is not None:
            if joint is None:
                raise ValueError("this LabelRankBoost was fitted with joint features: pass joint= to predict")
            J = check_joint_features(joint, X.shape[0], self.n_labels_)
            if J.shape[2] != self.joint_coef_.shape[0]:
                raise ValueError(f"joint has {J.shape[2]} joint features per label, but this LabelRankBoost was "
                                 f"fitted with {self.joint_coef_.shape[0]}; pass the joint features of the fit")
            scores += J @ self.joint_coef_
        elif joint is not None:
            raise ValueError("this LabelRankBoost was fitted without joint features; joint must be None")
        return scores

    def predict(self, X, joint=None):
        """Label scores, as :meth:`decision_function` (higher = preferred)."""
        return self.decision_function(X, joint)

    def predict_ranking(self, X, joint=None):
        """The induced total order: per instance the labels from most to least preferred (ties by label index)."""
        return np.argsort(-self.decision_function(X, joint), axis=1, kind="stable")

    def score(self, X, y, joint=None, sample_weight=None):
        """1 - the generalised error of this estimator's decomposition (cyrank.metrics.label_ranking_error, ties
        pessimistic, instances without edges dropped): higher is better, as scikit-learn expects.
        ``sample_weight``: the error's mean over instances weighted by w_i."""
        from .metrics import label_ranking_error

        scores = self.decision_function(X, joint)
        G = self._graphs(y, scores.shape[0])
        if sample_weight is None:
            return 1.0 - label_ranking_error(G, scores, self.decomposition)
        weight = check_sample_weight(sample_weight, scores.shape[0], what="instance")
        per = label_ranking_error(G, scores, self.decomposition, return_per_instance=True)[1]
        kept = ~np.isnan(per)
        if not weight[kept].any():
            raise ValueError("sample_weight is 0 on every scored instance (instances with a preference edge); give "
                             "some of them a positive weight")
        return 1.0 - float(weight[kept] @ per[kept]) / float(weight[kept].sum())

    def objective(self, X, y, joint=None, sample_weight=None):
        """The objective at ``coef_`` (and ``joint_coef_``) with this estimator's decomposition and penalty, and
        the instance weights ``sample_weight`` (None: 1)."""
        check_is_fitted(self, "coef_")
        return solver.objective(X, self._graphs(y, np.shape(X)[0]), self.coef_, joint=joint,
                                joint_coef=self.joint_coef_, decomposition=self.decomposition, penalty=self.penalty,
                                alpha=self.alpha, l1_ratio=self.l1_ratio, sample_weight=sample_weight)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = False
        return tags
