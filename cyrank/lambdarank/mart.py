"""LambdaMART: gradient-boosted regression trees whose gradients and hessians are cyrank's lambdas (Burges 2010,
sections 5-6), the trees grown by LightGBM through its custom-objective interface (Ke et al., NIPS 2017). No tree
learner of our own: LightGBM finds the splits and the Newton leaf values -sum(lambda) / sum(weight).

The lambdas are those of _lambdas.pyx for the chosen metric (NDCG@k, ERR@k, MAP, or plain RankNet), so
LambdaMART trains on metrics LightGBM's built-in ``lambdarank`` objective does not offer (ERR, MAP). The extra
``lightgbm`` (``pip install "cyrank[lightgbm]"``) provides LightGBM; without it, fit raises ImportError naming it.

:class:`ListwiseMART` grows the same LightGBM trees on the gradients and Hessian diagonals of the listwise losses
(ListNet / softmax cross-entropy with the exp, gain or xendcg target, ListMLE with Efron or Breslow ties and top_k),
from the Cython kernel of cyrank.listwise (:class:`cyrank.listwise.DocGradients`); both estimators share this
module's machinery (the base class ``_MART``).

LightGBM's model-text parser trusts its input (a wrong array length or child index reads out of bounds; an error
inside its parallel tree parser aborts the process), so no model text reaches it unchecked:
:func:`check_model_string` verifies the whole structure first, and a model file is checked when it is loaded.

LightGBM's conventions (LGBMRanker's): any other LightGBM parameter passes through ``**kwargs``
(:func:`check_lightgbm_params` says which are refused and why), ``eval_set`` is a list with ``eval_names``,
``eval_metric`` and ``eval_at`` (:func:`eval_metric_names`), ``evals_result_`` has LightGBM's shape, fit takes
LightGBM's ``callbacks`` (they see cyrank's metrics), and ``feature_importances_`` counts splits or gain.
"""
import difflib
import functools
import numbers
import re
import time
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from .._base import RankerMixin, SolverEstimator, check_predict_X, set_fitted
from .._result import SolveResult
from .._queries import QueryGroups
from .._validation import (RankingDataWarning, check_n_jobs, check_option, check_param,
                           check_position, check_ranking_data, check_sample_weight, check_verbose, random_seed)
from . import _unbiased
from .solver import (TIES, _err_scale_message, _Pairs, check_eval_set, check_metric_data, content_order,
                     parse_metric, resolve_ties)

MAX_LEAVES = 131072  # LightGBM's bound on num_leaves
MAX_ROUNDS = 2**31 - 1  # LightGBM's num_iterations is a C int
MIN_CHILD_AUTO = 20  # LightGBM's min_data_in_leaf, the cap of min_child_samples="auto"
DECISION_TYPES = (0, 2)  # numerical split, no missing-value rule (X is finite), default right or left
FIX = "re-save the model from the fitted estimator (cyrank.io.save_model) or fit it again"


def _lightgbm():
    try:
        import lightgbm
    except ImportError:  # pragma: no cover - the message is the point
        raise ImportError("LambdaMART grows its trees with LightGBM, which is not installed: install the extra "
                          "with  pip install \"cyrank[lightgbm]\"  (or pip install lightgbm)") from None
    return lightgbm


# ------------------------------------------------------------------------------------------ model text check
_INT = r"-?\d{1,10}"
_FLOAT = r"-?(?:\d{1,400}(?:\.\d{0,400})?|\.\d{1,400})(?:[eE][-+]?\d{1,4})?"
_INT_LIST = re.compile(rf"(?:{_INT}(?: {_INT})*)?")
_FLOAT_LIST = re.compile(rf"(?:{_FLOAT}(?: {_FLOAT})*)?")
_END = "end of parameters\n\npandas_categorical:null\n"
_FEATURE_INFO = re.compile(rf"none|\[{_FLOAT}:{_FLOAT}\]")
# The lines of one tree, in LightGBM 4's order: (key, kind, length: "n" = num_leaves, "n-1" = its internal nodes)
_TREE_KEYS = (("num_leaves", "int", 1), ("num_cat", "int", 1), ("split_feature", "int", "n-1"),
              ("split_gain", "float", "n-1"), ("threshold", "float", "n-1"), ("decision_type", "int", "n-1"),
              ("left_child", "int", "n-1"), ("right_child", "int", "n-1"), ("leaf_value", "float", "n"),
              ("leaf_weight", "float", "n"), ("leaf_count", "int", "n"), ("internal_value", "float", "n-1"),
              ("internal_weight", "float", "n-1"), ("internal_count", "int", "n-1"), ("is_linear", "int", 1),
              ("shrinkage", "float", 1))


def _values(text, kind, length, what):
    """The numbers of a space-separated LightGBM array line (int64 or float64), checked token by token."""
    if not (_INT_LIST if kind == "int" else _FLOAT_LIST).fullmatch(text):
        raise ValueError(f"{what} is not a list of {'integers' if kind == 'int' else 'numbers'}: {text[:60]!r}")
    values = np.array(text.split(" ") if text else [], dtype=np.int64 if kind == "int" else np.float64)
    if values.size != length:
        raise ValueError(f"{what} has {values.size} values, {length} expected")
    if kind == "float" and not np.all(np.isfinite(values)):
        raise ValueError(f"{what} holds a value out of the float64 range")
    return values


def _check_tree(block, t, n_features):
    """One ``Tree=t`` block (its text up to the next tree): every line, array length and index."""
    if not (block.startswith(f"Tree={t}\n") and block.endswith("\n\n\n")):
        raise ValueError(f"the {len(block)} characters tree_sizes gives tree {t} are not a block from 'Tree={t}' to "
                         "a blank line (tree_sizes does not match the trees, or a tree was edited)")
    lines = block.split("\n")
    if len(lines) != len(_TREE_KEYS) + 4:
        raise ValueError(f"tree {t} has {len(lines) - 4} lines, not LightGBM 4's {len(_TREE_KEYS)}")
    fields = {}
    for (key, kind, length), line in zip(_TREE_KEYS, lines[1:-3]):
        name, eq, text = line.partition("=")
        if name != key or not eq:
            raise ValueError(f"tree {t}: line {line[:40]!r} where {key}=... belongs")
        n = 1 if length == 1 else int(fields["num_leaves"][0]) - (length == "n-1")
        if key == "leaf_weight" and n == 1 and text == "":  # LightGBM writes no weight for a one-leaf tree
            n = 0
        fields[key] = _values(text, kind, n, f"tree {t}: {key}")
        if key == "num_leaves" and not 1 <= fields[key][0] <= MAX_LEAVES:
            raise ValueError(f"tree {t}: num_leaves={fields[key][0]} is outside [1, {MAX_LEAVES}]")
    leaves = int(fields["num_leaves"][0])
    if fields["num_cat"][0] != 0 or fields["is_linear"][0] != 0:
        raise ValueError(f"tree {t}: num_cat and is_linear must be 0 (LambdaMART grows numerical splits only)")
    feature = fields["split_feature"]
    outside = feature[(feature < 0) | (feature >= n_features)]
    if outside.size:
        raise ValueError(f"tree {t}: split_feature {int(outside[0])} is not a feature index in [0, {n_features})")
    bad = np.setdiff1d(fields["decision_type"], DECISION_TYPES)
    if bad.size:
        raise ValueError(f"tree {t}: decision_type {int(bad[0])} is not one LambdaMART produces "
                         f"({', '.join(map(str, DECISION_TYPES))}: numerical splits)")
    if np.any(fields["leaf_count"] < 0) or np.any(fields["internal_count"] < 0):
        raise ValueError(f"tree {t}: a negative leaf_count or internal_count")
    # A tree: every internal node but the root (0) and every leaf (child ~leaf < 0) is the child of exactly one
    # node, and a node's internal children have larger indices (as LightGBM numbers them): no cycle, all reachable.
    children = np.concatenate([fields["left_child"], fields["right_child"]])
    parents = np.tile(np.arange(leaves - 1), 2)
    internal = children >= 0
    if np.any(children[internal] <= parents[internal]) or np.any(children[internal] >= leaves - 1) or \
            np.any(~children[~internal] >= leaves):
        raise ValueError(f"tree {t}: a child index out of range (left_child/right_child)")
    slots = np.where(internal, children, leaves - 1 + ~children)  # nodes 0..L-2, then leaves
    if np.any(np.bincount(slots, minlength=2 * leaves - 1)[1:] != 1):
        raise ValueError(f"tree {t}: left_child/right_child do not form a binary tree of {leaves} leaves")


@functools.lru_cache(maxsize=8)  # load_model checks a file's text, and its first predict the same text again
def check_model_string(text, n_features, n_trees):
    """The part of a LightGBM model text that LightGBM may parse, after checking its whole structure: the header
    (one output, ``max_feature_idx`` = n_features - 1, ``feature_names`` Column_0..., ``monotone_constraints`` when
    that parameter was passed, ``feature_infos`` and ``tree_sizes`` with one entry per feature and per tree), then
    ``n_trees`` trees, each block exactly ``tree_sizes`` long, its 16 lines in LightGBM 4's order, every array of
    num_leaves (or num_leaves - 1) finite numbers, split features in [0, n_features), decision types of numerical
    splits, children forming one binary tree; then "end of trees", and the text ends as LightGBM ends it (a
    truncated text is refused). What follows the trees (feature importances, parameters) is not needed for
    predictions and is left out. ValueError naming the first problem otherwise."""
    if not text.isascii() or "\r" in text or "\0" in text:
        raise ValueError("the model text holds non-ASCII, carriage-return or NUL characters")
    start = text.find("\n\nTree=0\n")
    if start < 0:
        raise ValueError("the model text has no trees (no 'Tree=0' block): it is not a LightGBM model")
    header = text[:start].split("\n")
    found = [line.partition("=")[0] for line in header]
    keys = ["tree", "version", "num_class", "num_tree_per_iteration", "label_index", "max_feature_idx",
            "feature_names", *(["monotone_constraints"] if "monotone_constraints" in found else []),
            "feature_infos", "tree_sizes"]
    if found != keys or header[0] != "tree":
        raise ValueError(f"the header lines are {found[:12]}, not LightGBM 4's {keys}")
    head = {line.partition("=")[0]: line.partition("=")[2] for line in header[1:]}
    expect = {"version": "v4", "num_class": "1", "num_tree_per_iteration": "1", "label_index": "0",
              "max_feature_idx": str(n_features - 1)}
    for key, value in expect.items():
        if head[key] != value:
            raise ValueError(f"{key}={head[key][:40]} where LambdaMART's model of {n_features} feature(s) has "
                             f"{key}={value}")
    if head["feature_names"] != " ".join(f"Column_{j}" for j in range(n_features)):
        raise ValueError(f"feature_names is not Column_0 ... Column_{n_features - 1}")
    if "monotone_constraints" in head:  # written when the parameter was passed; LightGBM reads it back
        signs = _values(head["monotone_constraints"], "int", n_features, "monotone_constraints (one per feature)")
        if np.any(np.abs(signs) > 1):
            raise ValueError("monotone_constraints holds a value other than -1, 0 or 1")
    infos = head["feature_infos"].split(" ")
    if len(infos) != n_features or not all(_FEATURE_INFO.fullmatch(info) for info in infos):
        raise ValueError(f"feature_infos is not one [min:max] or 'none' per feature ({n_features})")
    sizes = _values(head["tree_sizes"], "int", n_trees, "tree_sizes (one per tree)")
    pos = start + 2
    for t, size in enumerate(sizes):
        if size <= 0 or pos + size > len(text):
            raise ValueError(f"tree_sizes: tree {t} ({size} characters) does not fit in the text")
        _check_tree(text[pos:pos + int(size)], t, n_features)
        pos += int(size)
    if not text.startswith("end of trees\n", pos):
        raise ValueError(f"the text after tree {n_trees - 1} is not 'end of trees': more trees than n_iter_ = "
                         f"{n_trees}, or a damaged block")
    if not text.endswith(_END):
        raise ValueError(f"the text does not end as LightGBM ends a model ({_END!r}): it was truncated")
    return text[:pos] + "end of trees\n"


def _count_of(values, name):
    value = values.get(name)
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} = {value!r:.40} is not an integer")
    return int(value)


def _checked_model_text(values):
    """check_model_string on the fitted attributes ``values`` (name -> value): the trees against n_iter_,
    best_iteration_, n_features_in_ and features_used_. ValueError naming the attribute and the fix."""
    try:
        n_features, n_trees = _count_of(values, "n_features_in_"), _count_of(values, "n_iter_")
        best = values.get("best_iteration_", n_trees)
        if not isinstance(best, numbers.Integral) or not 1 <= best <= n_trees:
            raise ValueError(f"best_iteration_ = {best!r:.40} is not a round in [1, n_iter_ = {n_trees}]")
        used = values.get("features_used_")
        if used is not None:
            used = np.asarray(used)
            if used.ndim != 1 or used.dtype.kind not in "iu" or used.size == 0 or np.any(np.diff(used) <= 0) \
                    or used[0] < 0 or used[-1] >= n_features:
                raise ValueError(f"features_used_ is not an increasing list of columns in [0, n_features_in_ = "
                                 f"{n_features})")
            n_features = used.size
        if n_trees < 1:
            raise ValueError(f"n_iter_ = {n_trees}: a fitted model has at least one tree")
        text = values.get("model_string_")
        if not isinstance(text, str):
            raise ValueError(f"model_string_ is a {type(text).__name__}, not a str")
        try:
            return check_model_string(text, n_features, n_trees)
        except ValueError as exc:
            raise ValueError(f"model_string_ (n_iter_ = {n_trees} tree(s) on {n_features} feature(s)): {exc}") \
                from None
    except ValueError as exc:
        raise ValueError(f"{exc}; {FIX}") from None


def _used_columns(X):
    """(X restricted to its columns with a stored value, as CSR, and those columns) for a sparse X whose other
    columns are empty; (X, None) when every column is used or X is dense. LightGBM allocates per declared column,
    so a file declaring feature 2**26 would cost gigabytes; this keeps the memory proportional to the data."""
    if not sp.issparse(X):
        return X, None
    X = sp.csr_matrix(X)
    used = np.unique(X.indices)
    if used.size == X.shape[1]:
        return X, None
    if used.size == 0:  # an all-zero X: one (constant) column, LightGBM needs one
        used = np.zeros(1, dtype=np.int64)
    return _select_columns(X, used), used.astype(np.int64)


def _varies(X):
    """Whether some column of X (dense, or CSR) takes two different values."""
    if not sp.issparse(X):
        return bool(np.any(X.max(axis=0) > X.min(axis=0)))
    return X.nnz > 0 and bool(np.any(X.max(axis=0).toarray() > X.min(axis=0).toarray()))


def _select_columns(X, used):
    """The columns ``used`` (sorted) of the CSR matrix X, in O(nnz log len(used)) time and O(nnz) memory (scipy's
    column indexing allocates per column of X)."""
    pos = np.searchsorted(used, X.indices)
    keep = used[np.minimum(pos, used.size - 1)] == X.indices
    if np.all(keep):
        return sp.csr_matrix((X.data, pos, X.indptr), shape=(X.shape[0], used.size))
    indptr = np.concatenate([[0], np.cumsum(keep)])[X.indptr]
    return sp.csr_matrix((X.data[keep], pos[keep], indptr), shape=(X.shape[0], used.size))


# ------------------------------------------------------------------------------------ LightGBM's parameters
# LightGBM's main name of each of LambdaMART's own parameters: a LightGBM alias of one of them is refused (the named
# parameter is the one way to set it, so no two values can disagree)
OWN_PARAMS = {"num_iterations": "n_estimators", "learning_rate": "learning_rate", "num_leaves": "num_leaves",
              "min_data_in_leaf": "min_child_samples", "feature_fraction": "colsample_bytree",
              "num_threads": "n_jobs", "seed": "random_state", "early_stopping_round": "early_stopping_rounds",
              "lambdarank_truncation_level": "truncation", "lambdarank_norm": "norm", "sigmoid": "sigma",
              "verbosity": "verbose"}
_BUILTIN_ONLY = ("it configures LightGBM's built-in objectives or metrics, which LambdaMART does not use (its "
                 "gradients are cyrank's lambdas of `metric`), so it would be ignored")
_EARLY_STOP = ("early_stopping_rounds watches the first metric of the first eval set; for LightGBM's other rules pass "
               "fit(..., callbacks=[lightgbm.early_stopping(n, first_metric_only=..., min_delta=...)])")
_PREDICT = "it is a prediction setting: predict scores with every kept tree (n_iter_ = best_iteration_)"
_FILES = "it is a setting of LightGBM's command line (files, tasks), not of a fit from Python"
# Other LightGBM parameters refused (main names; their aliases too): why, and what to use instead
REFUSED_PARAMS = {
    "objective": "LambdaMART's objective is cyrank's lambdas: choose them with metric='ndcg@10', 'err@5', 'map' or "
                 "'ranknet'",
    "metric": "the evaluation metrics are cyrank's: fit(..., eval_metric=['ndcg@5', 'map'], eval_at=(1, 3, 5))",
    "eval_at": "pass the cut-offs to fit(..., eval_at=(1, 3, 5))",
    "is_provide_training_metric": "put the training set in eval_set (LightGBM's 'training' entry of evals_result_)",
    "first_metric_only": _EARLY_STOP, "early_stopping_min_delta": _EARLY_STOP,
    "label_gain": "cyrank's lambdas and metrics use the gain 2**y - 1; " + _BUILTIN_ONLY,
    "lambdarank_position_bias_regularization": "estimate the position biases with position_bias='joint', "
                                               "position_bias_norm= and fit(..., position=), or weigh clicked rows "
                                               "by 1 / propensity with fit(..., sample_weight=) (Unbiased "
                                               "LambdaMART, class docstring); " + _BUILTIN_ONLY,
    **dict.fromkeys(("alpha", "fair_c", "poisson_max_delta_step", "tweedie_variance_power", "is_unbalance",
                     "scale_pos_weight", "reg_sqrt", "multi_error_top_k", "auc_mu_weights", "objective_seed",
                     "num_class", "boost_from_average", "pos_bagging_fraction", "neg_bagging_fraction"), _BUILTIN_ONLY),
    **dict.fromkeys(("linear_tree", "linear_lambda"), "LambdaMART's trees have constant leaves (a model file "
                                                      "refuses linear ones)"),
    **dict.fromkeys(("categorical_feature", "max_cat_threshold", "cat_l2", "cat_smooth", "max_cat_to_onehot",
                     "min_data_per_group"), "LambdaMART treats every column of X as numeric (no categorical "
                                            "splits; one-hot encode a categorical column)"),
    "zero_as_missing": "X is finite and its zeros are values (LambdaMART's trees have no missing-value rule)",
    **dict.fromkeys(("num_iteration_predict", "start_iteration_predict", "predict_raw_score", "predict_leaf_index",
                     "predict_contrib", "predict_disable_shape_check", "pred_early_stop", "pred_early_stop_freq",
                     "pred_early_stop_margin"), _PREDICT),
    **dict.fromkeys(("task", "config", "data", "valid", "input_model", "output_model", "output_result",
                     "convert_model", "convert_model_language", "save_binary", "snapshot_freq", "header",
                     "label_column", "weight_column", "group_column", "ignore_column", "two_round",
                     "parser_config_file", "precise_float_parser", "saved_feature_importance_type", "metric_freq"),
                    _FILES),
    **dict.fromkeys(("machines", "num_machines", "local_listen_port", "machine_list_filename", "time_out",
                     "pre_partition"), "LambdaMART trains on one machine (LightGBM's network settings)"),
    "bagging_by_query": "LightGBM samples whole queries from its Dataset's query groups, which LambdaMART does not "
                        "give it (the rows stay in the caller's order; the lambdas are cyrank's), so every row would "
                        "be left out; use bagging_fraction and bagging_freq (rows)",
    "class_weight": "it weighs classes of a classifier; weigh rows with fit(..., sample_weight=)",
}
# LightGBM's parameters that hold one value per column of X (or lists of columns): renumbered when a sparse X's empty
# columns are left out (features_used_)
PER_COLUMN_PARAMS = ("monotone_constraints", "feature_contri", "max_bin_by_feature", "cegb_penalty_feature_lazy",
                     "cegb_penalty_feature_coupled")
IMPORTANCE_TYPES = ("split", "gain")
POSITION_BIASES = (None, "joint")  # LambdaMART's position_bias
# what LambdaMART sets unless a passed parameter says otherwise (force_col_wise=True drops force_row_wise)
DEFAULT_LIGHTGBM = {"deterministic": True, "force_row_wise": True,
                    # features that min_data_in_leaf makes unsplittable are kept: with none left LightGBM would stop
                    # ("num_features() > 0") instead of growing a one-leaf tree
                    "feature_pre_filter": False}


@functools.lru_cache(maxsize=1)
def lightgbm_aliases():
    """{name or alias: LightGBM's main name} for every parameter of the installed LightGBM (its own table,
    LGBM_DumpParamAliases, read through lightgbm.basic._ConfigAliases), and LGBMRanker's ``class_weight``."""
    table = _lightgbm().basic._ConfigAliases._get_all_param_aliases()
    names = {alias: main for main, aliases in table.items() for alias in aliases}
    return {**names, "class_weight": "class_weight"}


def _check_value(name, value):
    """``value`` if LightGBM can take it and a model file can hold it: None, a bool, a finite number, a str, or a
    (nested) list or tuple of them. TypeError otherwise."""
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_value(name, item)
        return value
    if value is None or isinstance(value, (str, bool, np.bool_, numbers.Integral)):
        return value
    if isinstance(value, numbers.Real) and np.isfinite(value):
        return value
    raise TypeError(f"LightGBM parameter {name}={value!r:.60}: give None, a bool, a finite number, a str, or a "
                    f"list of them (what LightGBM reads and a model file holds), not a {type(value).__name__}")


def check_lightgbm_params(params, *, own=None, refused=None, who="LambdaMART"):
    """The LightGBM parameters passed to LambdaMART through ``**kwargs``, checked by name against the installed
    LightGBM's table (aliases included): a name LightGBM does not know is refused (LightGBM would only log a
    warning, which LambdaMART silences, and ignore it: a misspelt name would train another model unnoticed), as are
    LightGBM's names of LambdaMART's own parameters (:data:`OWN_PARAMS`), those that would be ignored or would
    break LambdaMART (:data:`REFUSED_PARAMS`) and two names of one parameter. The values are LightGBM's to check
    (at fit: a ValueError with LightGBM's message). ``own`` and ``refused`` replace OWN_PARAMS and REFUSED_PARAMS
    (ListwiseMART's tables, ``who`` its name). Returns the dict."""
    if not params:
        return {}
    own = OWN_PARAMS if own is None else own
    refused = REFUSED_PARAMS if refused is None else refused
    aliases = lightgbm_aliases()
    seen = {}
    for name, value in params.items():
        main = aliases.get(name)
        if main is None:
            close = difflib.get_close_matches(name, list(aliases), n=3)
            hint = f"; did you mean {' or '.join(close)}?" if close else "."
            raise ValueError(f"{name!r} is not a LightGBM parameter (LightGBM {_lightgbm().__version__} would "
                             f"ignore it){hint} LambdaMART passes every parameter LightGBM knows (its names and "
                             "aliases: https://lightgbm.readthedocs.io/en/latest/Parameters.html)")
        if main in own:
            raise ValueError(f"{name}={value!r:.40} is LightGBM's name of {who}'s parameter "
                             f"{own[main]!r}: pass {own[main]}= instead (one name per setting)")
        if refused.get(main):
            raise ValueError(f"LightGBM parameter {name!r} is refused: {refused[main]}")
        if main in seen:
            raise ValueError(f"{seen[main]!r} and {name!r} are two names of LightGBM's {main!r}: pass one")
        seen[main] = name
        _check_value(name, value)
    return dict(params)


def _per_column(params, n_features, used):
    """The per-column LightGBM parameters checked against the n_features columns of X and, when a sparse X's empty
    columns are left out (``used``), renumbered to the columns LightGBM sees."""
    aliases = lightgbm_aliases() if params else {}
    out = {}
    for name, value in params.items():
        main = aliases[name]
        if main in PER_COLUMN_PARAMS and value is not None:
            values = list(value) if isinstance(value, (list, tuple)) else [value]
            if len(values) != n_features:
                raise ValueError(f"LightGBM parameter {name} has {len(values)} values: give one per column of X "
                                 f"({n_features})")
            value = values if used is None else [values[j] for j in used]
        elif main in ("forcedsplits_filename", "forcedbins_filename") and value and used is not None:
            raise ValueError(f"LightGBM parameter {name}: its file numbers X's columns, and LambdaMART leaves out the "
                             f"{n_features - used.size} columns of this sparse X that hold no value (features_used_), "
                             "so LightGBM would read other columns; fit on X with a stored value in every column")
        elif main == "interaction_constraints" and value is not None and used is not None:
            kept = {int(j): new for new, j in enumerate(used)}
            value = [[kept[j] for j in group if j in kept] for group in value]
        out[name] = value
    return out


def check_params(*, metric, n_estimators, learning_rate, num_leaves, min_child_samples, colsample_bytree, sigma,
                 ties, early_stopping_rounds, n_jobs, random_state, verbose, importance_type="split",
                 position_bias=None, position_bias_norm=1.0):
    """LambdaMART's parameters checked (a ValueError naming the first bad one): (n_estimators, learning_rate,
    num_leaves, min_child_samples ("auto" or an int), colsample_bytree, sigma, (position_bias,
    position_bias_norm), early_stopping_rounds, n_jobs). ``truncation`` and ``norm`` are checked with the lambdas,
    at fit; the LightGBM parameters passed by name by :func:`check_lightgbm_params`."""
    check_option("importance_type", importance_type, IMPORTANCE_TYPES)
    parse_metric(metric)
    check_option("ties", ties, TIES)
    resolve_ties(ties, metric)
    position_bias = check_option("position_bias", position_bias, POSITION_BIASES)
    position_bias_norm = check_param("position_bias_norm", position_bias_norm, low=0.0)
    trees = _check_tree_params(n_estimators, learning_rate, num_leaves, min_child_samples, colsample_bytree,
                               early_stopping_rounds, n_jobs, random_state, verbose)
    return (*trees[:5], check_param("sigma", sigma, low=0.0, low_open=True), (position_bias, position_bias_norm),
            *trees[5:])


def _check_tree_params(n_estimators, learning_rate, num_leaves, min_child_samples, colsample_bytree,
                       early_stopping_rounds, n_jobs, random_state, verbose):
    """The parameters of the trees and of the boosting loop that LambdaMART and ListwiseMART share: (n_estimators,
    learning_rate, num_leaves, min_child_samples, colsample_bytree, early_stopping_rounds, n_jobs)."""
    if not isinstance(random_state, (np.random.RandomState, np.random.Generator)):
        random_seed(random_state)  # checked here, drawn from (a RandomState or Generator) at fit only
    check_verbose(verbose)
    if isinstance(num_leaves, numbers.Integral) and not isinstance(num_leaves, (bool, np.bool_)) \
            and num_leaves > MAX_LEAVES:
        raise ValueError(f"num_leaves must be in [2, {MAX_LEAVES}] (LightGBM's limit), got {num_leaves}; lower it")
    if isinstance(n_estimators, numbers.Integral) and not isinstance(n_estimators, (bool, np.bool_)) \
            and n_estimators > MAX_ROUNDS:
        raise ValueError(f"n_estimators must be in [1, 2**31 - 1] (LightGBM's limit), got {n_estimators}")
    min_child = min_child_samples
    if not (isinstance(min_child, str) and min_child == "auto"):
        if isinstance(min_child, str):
            raise ValueError(f"min_child_samples must be 'auto' or an integer >= 1, got {min_child!r}")
        min_child = check_param("min_child_samples", min_child, low=1, integer=True)
    return (check_param("n_estimators", n_estimators, low=1, integer=True),
            check_param("learning_rate", learning_rate, low=0.0, low_open=True),
            check_param("num_leaves", num_leaves, low=2, integer=True),
            min_child,
            check_param("colsample_bytree", colsample_bytree, low=0.0, high=1.0, low_open=True),
            None if early_stopping_rounds is None else check_param(
                "early_stopping_rounds", early_stopping_rounds, low=1, integer=True),
            check_n_jobs(n_jobs))


# --------------------------------------------------------------------------------- eval sets and callbacks
def eval_metric_names(metric, eval_metric=None, eval_at=None):
    """The names of the metrics scored on every eval set, in order, as LightGBM's LGBMRanker orders them: those of
    ``eval_metric`` (a name or a list of names of :func:`cyrank.metrics.metric_by_name`), then the lambdas'
    ``metric`` ("ranknet" is scored by "pairacc"), each once. With ``eval_at`` (LightGBM's eval_at), a name given
    without a cut-off that takes one (ndcg, err, p), and the lambdas' metric's name, are scored at each of its
    cut-offs, the lambdas' metric last at its own: metric="ndcg@10", eval_metric="map", eval_at=(1, 3) gives map,
    ndcg@1, ndcg@3, ndcg@10 (LGBMRanker: map@1, map@3, ndcg@1, ndcg@3; cyrank's map takes no cut-off).
    Canonical lowercase names: "ndcg@5", "map"."""
    from ..metrics import CUT_OFF_NAMES, parse_metric_name

    base, k = parse_metric(metric)
    own = "pairacc" if base == "ranknet" else base if k is None else f"{base}@{k}"
    if eval_at is not None:
        if not isinstance(eval_at, (list, tuple)) or not eval_at:
            raise TypeError(f"eval_at must be a non-empty list or tuple of cut-offs, as (1, 3, 5); got {eval_at!r:.60}")
        eval_at = [check_param("eval_at", k, low=1, integer=True) for k in eval_at]
    if eval_metric is None:
        given = []
    elif isinstance(eval_metric, str):
        given = [eval_metric]
    elif isinstance(eval_metric, (list, tuple)) and all(isinstance(m, str) for m in eval_metric):
        given = list(eval_metric)
    else:
        raise TypeError(f"eval_metric must be a metric name or a list of names (cyrank.metrics.metric_by_name: "
                        f"'ndcg@10', 'map', 'err@5', ...), got {eval_metric!r:.60}")
    names = []
    for spec in given + ([] if eval_at is None else [own.partition("@")[0]]):
        name, k = parse_metric_name(spec, what="eval_metric")
        if k is None and eval_at is not None and name in CUT_OFF_NAMES:
            names += [f"{name}@{c}" for c in eval_at]
        else:
            names.append(name if k is None else f"{name}@{k}")
    return list(dict.fromkeys(names + [own]))


def _scorer(name, max_rel):
    """name -> f(y, scores, qid), the cyrank metric (ERR on the training labels' scale ``max_rel``)."""
    from ..metrics import metric_by_name

    f = metric_by_name(name)
    options = {"max_rel": max_rel} if name.startswith("err") else {}
    return lambda y, s, q: float(f(y, s, q, **options))


def _eval_sets(eval_set, eval_names, X, y, qid):
    """[(name, (X, y[, qid]) or None for the training set)]: ``eval_set`` is one (X, y[, qid]) tuple or a list of
    them (LightGBM's eval_set). A set whose X and y (and qid) are the fit's own objects is the training set, named
    "training" (LightGBM's name, evaluated on the training Dataset); the others "valid_<i>", i its position;
    ``eval_names`` names them instead (one unique str per set)."""
    if eval_set is None:
        if eval_names is not None:
            raise ValueError("eval_names names the sets of eval_set, and no eval_set was given")
        return []
    many = isinstance(eval_set, list) and len(eval_set) > 0 and all(isinstance(e, (tuple, list)) for e in eval_set)
    sets = eval_set if many else [eval_set]
    for i, e in enumerate(sets):
        if not (isinstance(e, (tuple, list)) and len(e) in (2, 3)):
            raise ValueError(f"eval_set[{i}] must be a tuple (X, y) or (X, y, qid); eval_set is one such tuple or a "
                             "list of them")
    if eval_names is not None:
        if isinstance(eval_names, str) or not isinstance(eval_names, (list, tuple)) or \
                not all(isinstance(n, str) for n in eval_names) or len(set(eval_names)) != len(eval_names):
            raise ValueError(f"eval_names must be a list of distinct str, one per set of eval_set; got "
                             f"{eval_names!r:.80}")
        if len(eval_names) != len(sets):
            raise ValueError(f"eval_names has {len(eval_names)} names for the {len(sets)} set(s) of eval_set")
    out = []
    for i, e in enumerate(sets):
        own = e[0] is X and e[1] is y and (e[2] if len(e) == 3 else None) is qid
        name = eval_names[i] if eval_names is not None else "training" if own else f"valid_{i}"
        out.append((name, None if own else e))
    return out


def _checked_eval_sets(sets, n_features, metric, names, y_train):
    """{name: (X, y, qid)} of the eval sets other than the training set, each checked by check_eval_set (the set
    named in the message when there are several); with an ERR among the metrics ``names``, labels within the
    training labels' scale (ERR's max_rel)."""
    valid = {}
    err = next((m for m in names if m.startswith("err")), None)
    for name, data in sets:
        if data is None:
            continue
        try:
            valid[name] = check_eval_set(data, n_features, metric, y_train=y_train)
        except ValueError as exc:
            raise ValueError(f"{exc} (eval set {name!r})" if len(sets) > 1 else str(exc)) from None
        top, max_rel = float(valid[name][1].max()), float(y_train.max())
        if err is not None and top > max_rel:
            raise ValueError(_err_scale_message(err, top, max_rel, f"eval set {name!r}"))
    return valid


class _EarlyStopping:
    """``early_stopping_rounds``: stop when ``metric`` on the eval set ``name`` has not risen for ``rounds`` rounds
    (strictly: a tie is no progress, as LightGBM's early_stopping callback with min_delta=0), and keep its best
    round (LightGBM's EarlyStopException, so the booster's best_iteration)."""

    def __init__(self, rounds, name, metric):
        # LightGBM's early_stopping's place: after the log (10) and record_evaluation (20); an instance attribute,
        # as lightgbm.train gives callbacks without one in their __dict__ an order before every other
        self.order = 30
        self.rounds, self.key = rounds, (name, metric)
        self.best, self.best_round, self.best_results = None, -1, []

    def __call__(self, env):
        stop = _lightgbm().callback.EarlyStopException
        value = next(r[2] for r in env.evaluation_result_list if (r[0], r[1]) == self.key)
        if self.best is None or value > self.best:
            self.best, self.best_round, self.best_results = value, env.iteration, list(env.evaluation_result_list)
        elif env.iteration - self.best_round >= self.rounds:
            raise stop(self.best_round, self.best_results)
        if env.iteration == env.end_iteration - 1:
            raise stop(self.best_round, self.best_results)


class _LogEvery:
    """``verbose=k``: every k-th round and the last, one line with the round, the seconds since the fit began and
    every value evaluated (each eval set's metrics, as in evals_result_)."""

    def __init__(self, period, who="LambdaMART"):
        self.order = 10  # before early stopping (30), which ends the loop by an exception
        self.period, self.start, self.who = period, time.perf_counter(), who

    def __call__(self, env):
        i = env.iteration + 1
        if i % self.period and i != env.end_iteration:
            return
        values = "".join(f"  {r[0]} {r[1]} {r[2]:.6f}" for r in env.evaluation_result_list)
        print(f"{self.who} round {i:4d} {time.perf_counter() - self.start:9.2f} s{values}", flush=True)


# ------------------------------------------------------------------------------------------ listwise losses
LOSSES = ("listnet", "listmle")  # as cyrank.listwise's (not imported here: its kernel loads at the first fit)
TARGETS = ("exp", "gain", "xendcg")
LABEL_TIES = ("efron", "breslow")


def check_listwise_params(*, loss, target, ties, top_k, metric, n_estimators, learning_rate, num_leaves,
                          min_child_samples, colsample_bytree, early_stopping_rounds, n_jobs, random_state, verbose,
                          importance_type="split", newton_terms=1):
    """ListwiseMART's parameters checked (a ValueError naming the first bad one): (loss, target, ties, top_k) with
    each loss's defaults filled in (ListNet: target "exp"; ListMLE: ties "efron"), then what the trees take
    (n_estimators, learning_rate, num_leaves, min_child_samples, colsample_bytree, early_stopping_rounds, n_jobs).
    A parameter of the other loss (ties or top_k with ListNet, target with ListMLE) is refused, not ignored."""
    check_option("importance_type", importance_type, IMPORTANCE_TYPES)
    check_option("loss", loss, LOSSES)
    parse_metric(metric)
    if loss == "listnet":
        for name, value, why in (("ties", ties, "ListMLE's rule for equal labels (ListNet's target gives equal "
                                                "labels equal probability)"),
                                 ("top_k", top_k, "ListMLE's truncation of the Plackett-Luce likelihood")):
            if value is not None:
                raise ValueError(f"{name}={value!r:.40} is {why}; loss='listnet' takes no {name}: leave {name}=None, "
                                 "or choose loss='listmle'")
        target = check_option("target", "exp" if target is None else target, TARGETS)
        newton_terms = check_param("newton_terms", newton_terms, low=1, integer=True)
    else:
        if newton_terms != 1:
            raise ValueError(f"newton_terms={newton_terms!r:.40} is the Newton series of ListNet's gradient; "
                             "loss='listmle' takes none: leave newton_terms=1, or choose loss='listnet'")
        if target is not None:
            raise ValueError(f"target={target!r:.40} is ListNet's target distribution; loss='listmle' is the "
                             "likelihood of the label order and takes no target: leave target=None, or choose "
                             "loss='listnet'")
        ties = check_option("ties", "efron" if ties is None else ties, LABEL_TIES)
        if top_k is not None:
            top_k = check_param("top_k", top_k, low=1, integer=True)
    trees = _check_tree_params(n_estimators, learning_rate, num_leaves, min_child_samples, colsample_bytree,
                               early_stopping_rounds, n_jobs, random_state, verbose)
    return (*trees[:5], (loss, target, ties, top_k, newton_terms), *trees[5:])


class _ListwiseGradients:
    """ListwiseMART's gradient source: the per-row gradient and Hessian diagonal of the listwise loss from
    cyrank.listwise.DocGradients (the Cython kernel of the linear ListNet / ListMLE, O(n) per query, the label order
    and tie groups laid out once per fit), on the rows in an order fixed by their content (``order``: query, label,
    then content_order's key), so that every row gets the same gradient however the rows are permuted.

    xendcg: each call of ``gradients`` (one per boosting round) draws g = ``rng.random(n)`` over the rows in the
    caller's input order, ``rng = np.random.default_rng(seed)``, and sets the kernel's per-row coefficients w_i p_i
    to that draw's target; ``loss`` uses the first draw of a fresh generator of the same seed (the g the linear
    estimators fix for that random_state)."""

    def __init__(self, y, qid, X, *, loss, target, ties, top_k, sample_weight, seed, newton_terms=1):
        from ..listwise import DocGradients

        n = self.n = y.shape[0]
        self.order = content_order(QueryGroups(qid, y), X)
        self.y = np.ascontiguousarray(y[self.order], dtype=np.float64)
        self.max_rel = float(y.max())
        w = check_sample_weight(sample_weight, n)
        self.kernel = DocGradients(self.y, qid[self.order], loss=loss, target=target or "exp", ties=ties or "efron",
                                   top_k=top_k, sample_weight=None if w is None else w[self.order],
                                   random_state=seed, newton_terms=newton_terms)
        self.seed, self.xendcg = seed, target == "xendcg"
        if self.xendcg:
            self.rng = np.random.default_rng(seed)

    def _draw(self, g):
        """The xendcg target with noise g (caller's input row order) set in the kernel (its rows: ``order``)."""
        self.kernel.set_noise(g[self.order])

    def gradients(self, scores, grad, hess):
        if self.xendcg:
            self._draw(self.rng.random(self.n))
        grad[:], hess[:] = self.kernel(scores)

    def fitted_attributes(self, rounds):
        return {}

    def loss(self, scores):
        if self.xendcg:
            self._draw(np.random.default_rng(self.seed).random(self.n))
        self.kernel(np.ascontiguousarray(scores, dtype=np.float64))
        return float(self.kernel.loss_value)


class _MART(RankerMixin, SolverEstimator):
    """LightGBM trees grown on the gradients and hessians of a cyrank loss through LightGBM's custom-objective
    interface: the machinery LambdaMART and ListwiseMART share (LightGBM parameters, eval sets, callbacks, model
    text checks, prediction). A subclass gives ``__init__``, ``_check`` (its parameter check, returning
    (n_estimators, learning_rate, num_leaves, min_child_samples, colsample_bytree, ..., early_stopping_rounds,
    n_jobs)) and ``_prepare`` (the gradient source of the training rows)."""

    _model_schema = {"n_features_in_": "int>=1", "model_string_": "str", "n_iter_": "int>=1",
                     "best_iteration_": "int>=1", "evals_result_": "dicts?", "objective_": "float",
                     "converged_": "bool", "features_used_": "int[*] in [0, d)|None?", "min_child_samples_": "int>=1?",
                     "history_": "dict?"}  # history_: model files saved before evals_result_ (issue 30)

    def get_params(self, deep=True):
        """The parameters of ``__init__`` and the LightGBM parameters passed by name (``**kwargs``)."""
        return {**super().get_params(deep=deep), **self._lightgbm_params}

    def set_params(self, **params):
        """Set parameters; a name that is not one of ``__init__``'s is a LightGBM parameter (checked at fit)."""
        own = set(self._get_param_names())
        lightgbm_params = {name: params.pop(name) for name in list(params) if name.partition("__")[0] not in own}
        super().set_params(**params)
        self._lightgbm_params = {**self._lightgbm_params, **lightgbm_params}
        return self

    # cyrank._base.SolverEstimator: the fit is _MART's own (LightGBM grows the trees); _check is the subclass's
    _own_params = None  # LightGBM's names of the subclass's parameters (None: OWN_PARAMS)
    _refused_params = None  # LightGBM parameters the subclass refuses (None: REFUSED_PARAMS)

    def _check_params(self):
        """The LightGBM parameters passed by name (:func:`check_lightgbm_params`), then the others (``_check``,
        what it returns): at fit, and when a model file is loaded."""
        check_lightgbm_params(self._lightgbm_params, own=self._own_params, refused=self._refused_params,
                              who=type(self).__name__)
        return super()._check_params()
    _stale_attributes = ("history_",)

    @staticmethod
    def _min_child(min_child, n):
        """min_child_samples for n training rows: "auto" resolved, an integer that forbids every split refused."""
        if min_child == "auto":
            return min(MIN_CHILD_AUTO, max(1, n // 10))
        if 2 * min_child > n:
            raise ValueError(f"min_child_samples={min_child} forbids every split on {n} training rows (a split "
                             f"needs 2 * min_child_samples rows): give at most {max(1, n // 2)}, or "
                             "min_child_samples='auto' (the default)")
        return min_child

    def fit(self, X, y, qid=None, eval_set=None, sample_weight=None, *, eval_names=None, eval_metric=None,
            eval_at=None, callbacks=None):
        """Grow the trees on (X, y) grouped by ``qid``.

        ``sample_weight``: None, a number or one weight >= 0 per row (class docstring: LambdaMART, the weight c_i
        of the pairs where row i is preferred; ListwiseMART, w_i on the terms where row i is the target).
        ``eval_set``: one (X, y, qid) tuple or a list of them (LightGBM's eval_set),
        each scored after every round with ``eval_metric`` (unweighted; :func:`eval_metric_names` gives the names
        and their order, ``eval_at`` the cut-offs), named by ``eval_names`` (default "valid_<i>", and "training"
        for the fit's own X and y); the values are ``evals_result_``. ``callbacks``: LightGBM's callbacks
        (lightgbm.log_evaluation, early_stopping, record_evaluation, reset_parameter, or your own), which see
        cyrank's metrics, higher is better, as LightGBM's evaluation results."""
        return self._fit_trees(X, y, qid, eval_set, sample_weight, eval_names, eval_metric, eval_at, callbacks)

    def _fit_trees(self, X, y, qid, eval_set, sample_weight, eval_names, eval_metric, eval_at, callbacks,
                   **prepare):
        """fit's work; ``prepare``: the subclass's own fit arguments, passed to ``_prepare`` (LambdaMART's
        position)."""
        checked = self._check_params()
        n_estimators, learning_rate, num_leaves, min_child, colsample, *_, patience, n_jobs = checked
        who = type(self).__name__
        lightgbm_params = self._lightgbm_params
        verbose = check_verbose(self.verbose)
        names = eval_metric_names(self.metric, eval_metric, eval_at)
        if callbacks is not None and not (isinstance(callbacks, (list, tuple)) and all(map(callable, callbacks))):
            raise TypeError("callbacks must be a list of callables (LightGBM's callbacks, e.g. "
                            "[lightgbm.log_evaluation(10)])")
        sets = _eval_sets(eval_set, eval_names, X, y, qid)
        watched = next((name for name, data in sets if data is not None), None)
        if patience is not None and watched is None:
            raise ValueError("early_stopping_rounds needs an eval_set (other than the training set) to watch")
        boosting = [v for k, v in lightgbm_params.items() if lightgbm_aliases()[k] == "boosting"]
        if patience is not None and boosting and str(boosting[0]).lower() == "dart":
            raise ValueError("early_stopping_rounds cannot keep a best round with boosting='dart' (DART rescales the "
                             "earlier trees at every round, as LightGBM says refusing it): fit without it")
        X, y, qid = check_ranking_data(X, y, qid)
        n = X.shape[0]
        if n < 2:
            raise ValueError(f"{who} needs at least 2 samples ({self._needs}), got {n} sample")
        min_child = self._min_child(min_child, n)
        lgb = _lightgbm()
        pairs = self._prepare(checked, X, y, qid, sample_weight, **prepare)
        valid = _checked_eval_sets(sets, X.shape[1], self.metric, names, y)
        # LightGBM's rows: a sparse X in the kernel's order (a CSR copy, nnz-sized, its empty columns left out);
        # a dense X as given, in its own dtype, never copied (LightGBM bins it and keeps only the bins), the scores
        # then permuted into the kernel's order (to_kernel) and the lambdas back, O(n) per round
        if sp.issparse(X):
            Xs, used = _used_columns(sp.csr_matrix(X.tocsr()[pairs.order]))
            to_kernel, y_rows, q_rows = None, pairs.y, qid[pairs.order]
        else:
            Xs, used = X, None
            to_kernel, y_rows, q_rows = pairs.order, y, qid
        if not _varies(Xs):
            raise ValueError("every column of X is constant, so no tree can split and every document would get the "
                             f"same score (LightGBM stops with an error); {who} needs a feature that varies")
        buffers = []

        def objective(preds, dataset):
            # buffers allocated at the first round, after LightGBM has binned X (its peak); the lambdas handed back
            # in float32, which LightGBM keeps (it would convert float64 ones in a copy)
            if not buffers:
                buffers.extend([np.empty(n), np.empty(n)] if to_kernel is None else
                               [np.empty(n), np.empty(n), np.empty(n), np.empty(n, np.float32),
                                np.empty(n, np.float32)])
            if to_kernel is None:
                lam, hess = buffers
                pairs.gradients(np.ascontiguousarray(preds, dtype=np.float64), lam, hess)
                return lam, hess
            lam, hess, s_kernel, lam_rows, hess_rows = buffers
            np.take(preds, to_kernel, out=s_kernel)
            pairs.gradients(s_kernel, lam, hess)
            lam_rows[to_kernel], hess_rows[to_kernel] = lam, hess
            return lam_rows, hess_rows

        params = {**DEFAULT_LIGHTGBM, "objective": objective, "metric": "None", "learning_rate": learning_rate,
                  "num_leaves": num_leaves, "min_data_in_leaf": min_child, "feature_fraction": colsample,
                  "num_threads": 0 if n_jobs in (None, -1) else n_jobs, "seed": random_seed(self.random_state),
                  "verbosity": -1}
        if lightgbm_params.get("force_col_wise"):
            del params["force_row_wise"]
        params.update(_per_column(lightgbm_params, X.shape[1], used))
        train = lgb.Dataset(Xs, label=y_rows, params={"verbosity": -1})  # our objective: LightGBM needs no group
        valid_sets, valid_names, targets = [], [], {}
        for name, data in sets:
            if data is None:
                dataset, target = train, (y_rows, q_rows)
            else:
                Xv, yv, qv = valid[name]
                dataset = lgb.Dataset(self._columns(Xv, used), label=yv, reference=train, params={"verbosity": -1})
                target = (yv, qv)
            valid_sets.append(dataset)
            valid_names.append(name)
            targets[id(dataset)] = target
        scorers = [(name, _scorer(name, pairs.max_rel)) for name in names]

        def score(preds, dataset):  # cyrank's metrics, higher is better
            yv, qv = targets[id(dataset)]
            preds = np.asarray(preds, dtype=np.float64)
            return [(name, f(yv, preds, qv), True) for name, f in scorers]

        record = {}
        callbacks = [*(callbacks or ()), lgb.record_evaluation(record)]
        if verbose:
            callbacks.append(_LogEvery(verbose, who))
        if patience is not None:
            callbacks.append(_EarlyStopping(patience, watched, names[0]))
        try:
            booster = lgb.train(params, train, num_boost_round=n_estimators, valid_sets=valid_sets,
                                valid_names=valid_names, feval=score if valid_sets else None, callbacks=callbacks,
                                keep_training_booster=True)  # its training scores are read below; then dropped
        except lgb.basic.LightGBMError as exc:  # a refusal not foreseen above: LightGBM's words, and ours
            if "num_features()" in str(exc):
                raise ValueError("LightGBM finds no column of X it can split on (values within 1e-35 of 0 count as "
                                 f"0 for it); {who} needs a feature that varies") from None
            raise ValueError(f"LightGBM could not train {who} on this data with these parameters: "
                             f"{str(exc).rstrip('.')}. "
                             "Check num_leaves, min_child_samples, colsample_bytree and the LightGBM parameters "
                             "passed against the data") from None
        best = booster.best_iteration if booster.best_iteration > 0 else booster.current_iteration()
        model_string = booster.model_to_string(num_iteration=best)
        if model_string.count("\nnum_leaves=1\n") == best:
            warnings.warn("LightGBM found no split in any feature (every feature constant, or min_child_samples "
                          f"= {min_child} too large for the queries): every document gets the same score",
                          RankingDataWarning, stacklevel=3)
        final = self._training_scores(booster, best, Xs)
        if to_kernel is not None:
            final = final[to_kernel]
        cost = pairs.loss(final)
        evals = {s: {m: np.asarray(v, dtype=np.float64) for m, v in d.items()} for s, d in record.items()}
        result = SolveResult(model_string=model_string, n_iter=int(best), best_iteration=int(best),
                             evals_result=evals, objective=float(cost), converged=True, n_features_in=X.shape[1],
                             features_used=used, min_child_samples=min_child, optimality_name="objective",
                             **pairs.fitted_attributes(int(best)))
        set_fitted(self, result, stale=self._stale_attributes)
        self._booster = lgb.Booster(model_str=model_string)  # predict builds it after a load or unpickling
        return self

    @staticmethod
    def _training_scores(booster, best, Xs):
        """The scores of the training rows (LightGBM's Dataset order) after ``best`` rounds: those LightGBM keeps
        (Booster.eval_train hands them to a feval, no pass over X) when every round is kept, else a prediction."""
        kept = []
        if best == booster.current_iteration():
            booster.eval_train(feval=lambda preds, data: kept.append(np.array(preds, dtype=np.float64)) or [])
        if kept and kept[0].shape == (Xs.shape[0],):
            return kept[0]
        return np.asarray(booster.predict(Xs, num_iteration=best), dtype=np.float64)

    @staticmethod
    def _check_model_attributes(values):
        """cyrank.io.load_model's check of a model file's fitted attributes (name -> value) beyond the schema:
        the model text against n_iter_, best_iteration_, n_features_in_ and features_used_ (ValueError)."""
        _checked_model_text(values)

    @property
    def booster_(self):
        check_is_fitted(self, "model_string_")
        if self.__dict__.get("_booster") is None:
            values = {k: getattr(self, k, None) for k in ("n_features_in_", "n_iter_", "best_iteration_",
                                                          "features_used_", "model_string_")}
            self._booster = _lightgbm().Booster(model_str=_checked_model_text(values))
        return self._booster

    @property
    def best_score_(self):
        check_is_fitted(self, "model_string_")
        at = self.best_iteration_ - 1
        return {s: {m: float(v[at]) for m, v in d.items() if at < v.size}
                for s, d in getattr(self, "evals_result_", {}).items()}

    @property
    def feature_importances_(self):
        importance = self.booster_.feature_importance(
            importance_type=check_option("importance_type", self.importance_type, IMPORTANCE_TYPES))
        used = getattr(self, "features_used_", None)
        if used is None:
            return importance
        out = np.zeros(self.n_features_in_, dtype=importance.dtype)
        out[used] = importance
        return out

    @staticmethod
    def _columns(X, used):
        """X restricted to the columns the trees were grown on (csr_matrix when sparse: LightGBM reads it)."""
        if used is None:
            return sp.csr_matrix(X) if sp.issparse(X) else X
        if sp.issparse(X):
            return _select_columns(sp.csr_matrix(X), used)
        return np.ascontiguousarray(X[:, used])

    def decision_function(self, X):
        """Scores of the trees (the sum of their leaf values)."""
        X = check_predict_X(self, X)
        booster = self.booster_
        return np.asarray(booster.predict(self._columns(X, getattr(self, "features_used_", None))),
                          dtype=np.float64)

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_booster", None)  # rebuilt from model_string_
        return state

    def __setstate__(self, state):
        super().__setstate__({"_lightgbm_params": {}, **state})  # a pickle made before **kwargs has none


class _LambdaGradients:
    """LambdaMART's gradient source: the lambdas of _Pairs (rows in its ``order``), and their cost."""

    def __init__(self, pairs):
        self.pairs, self.order, self.y, self.max_rel = pairs, pairs.order, pairs.y, pairs.max_rel

    def gradients(self, scores, grad, hess):
        self.pairs.lambdas(scores, grad, hess, with_cost=False)

    def loss(self, scores):
        return float(self.pairs.lambdas(scores, np.empty(scores.size), np.empty(scores.size)))

    def fitted_attributes(self, rounds):
        """The fitted attributes of the gradient source after ``rounds`` kept rounds (none here)."""
        return {}


class _JointGradients(_LambdaGradients):
    """LambdaMART's gradient source with position_bias="joint": the lambdas of _unbiased.joint_lambdas on the rows
    of _Pairs (its order, labels, weights and metric), divided per pair by t+_{p(i)} t-_{p(j)}, the biases
    re-estimated after each call of ``gradients`` (one per boosting round) from the per-position losses of that
    call (LambdaMART's docstring)."""

    def __init__(self, pairs, position, norm):
        super().__init__(pairs)
        self.position = np.ascontiguousarray(position[pairs.order])
        n_positions = int(position.max()) + 1 if position.size else 1
        self.t_plus, self.t_minus = np.ones(n_positions), np.ones(n_positions)
        self.loss_plus, self.loss_minus = np.zeros(n_positions), np.zeros(n_positions)
        self.exponent = 1.0 / (1.0 + norm)
        self.after_round = []  # (t+, t-) as re-estimated after each round

    def _lambdas(self, scores, lam, hess):
        p = self.pairs
        return _unbiased.joint_lambdas(scores, p.y, p.offsets, self.position, self.t_plus, self.t_minus, p.w,
                                       p.code, p.k, p.sigma, p.norm, lam, hess, self.loss_plus, self.loss_minus,
                                       p.parallel_min_rows)

    def gradients(self, scores, grad, hess):
        self._lambdas(scores, grad, hess)
        self.update()

    def update(self):
        """t+_k = (S+_k / S+_r)^(1 / (1 + p)) at every position k with S+_k > 0, r the first such position (so
        t+_r = 1); t- the same from S-; a position without a pair on that side keeps its value."""
        for t, total in ((self.t_plus, self.loss_plus), (self.t_minus, self.loss_minus)):
            has = total > 0.0
            if has.any():
                t[has] = (total[has] / total[np.argmax(has)]) ** self.exponent
        self.after_round.append((self.t_plus.copy(), self.t_minus.copy()))

    def loss(self, scores):
        return float(self._lambdas(scores, np.empty(scores.size), np.empty(scores.size)))

    def fitted_attributes(self, rounds):
        """t+ and t- as re-estimated after round ``rounds``, the last kept one (early stopping keeps fewer rounds
        than were run)."""
        t_plus, t_minus = self.after_round[rounds - 1] if self.after_round else (self.t_plus, self.t_minus)
        return {"t_plus": t_plus.copy(), "t_minus": t_minus.copy()}


class LambdaMART(_MART):
    """Boosted trees trained on the lambdas of a ranking metric (module docstring).

    Weights (``fit(..., sample_weight=c)``): the pair (i, j) of a query with y_i > y_j counts with c_i, the weight of
    its preferred row: its lambda sigma rho_ij |dZ_ij| and its hessian term sigma^2 rho_ij (1 - rho_ij) |dZ_ij| are
    both multiplied by c_i, on both documents (i's and j's gradient and hessian), so the trees fit the gradient of
    sum_P c_i |dZ_ij| log(1 + exp(-sigma (s_i - s_j))). |dZ_ij| is still computed on the ranking of every row (a
    row of weight 0 keeps its position, and its pairs as the less preferred row; weight 0 removes exactly the
    pairs where it is preferred). A weight constant within a query weighs the query (weight 2 grows the same
    trees as the query given twice, with ``norm=False``; ``norm=True`` normalises each query's weighted lambdas by
    log2(1 + S) / S, S their weighted sum, so a query weight then counts sublinearly).

    Unbiased LambdaMART from clicks: with y = clicks (1 clicked, 0 not) of each logged session (one qid per
    session) and c_i = 1 / propensity of the position where clicked row i was shown (c on unclicked rows is never
    used: they are never preferred), the weighted lambdas are the inverse-propensity-weighted lambdas of Unbiased
    LambdaMART (Hu, Wang, Peng & Li, WWW 2019, where lambda_ij is divided by t+_i t-_j) with the
    position biases known: t-_j = 1 (no bias at unclicked positions) and t+_i the examination propensity,
    estimated e.g. by randomised swaps (Joachims, Swaminathan & Schnabel, WSDM 2017, section 5) or EM on the logs
    (Wang et al., WSDM 2018; cyrank.clicks).

    Recommended for clicks: these weights with ``metric="ranknet"``, so that the trees fit the IPS estimate of the
    pairwise logistic loss, sum_sessions sum_{i clicked} (1 / p_i) sum_{j shown, not clicked} log(1 + exp(-sigma
    (s_i - s_j))) (Joachims et al. 2017's estimator), without |dZ|. In bench/bench_clicks.py (eta 1, 5 seeds) it
    is above LightGBM's ``position`` and XGBoost's ``lambdarank_unbiased`` on every set-up measured, where the
    default NDCG lambdas are up to 0.011 below XGBoost; chosen after seeing those figures, confirmed on fresh seeds
    and at eta 0.5. With very small propensities (eta 2, weights up to 100) no one setting measured beats both
    peers on every logger (bench/RESULTS.md, issue 29).

    Joint estimation of the position biases (``position_bias="joint"``, Hu, Wang, Peng & Li, WWW 2019, sections
    3-4): the propensities are not given but learnt along the trees, at clicked and at unclicked positions. With
    ``fit(..., position=p)`` (p_i the display position of row i in its session, 0 = top), the pair (i, j), y_i >
    y_j (clicked i, unclicked j), has the loss L_ij = c_i |dZ_ij| log(1 + exp(-sigma (s_i - s_j))) and its lambda
    and hessian term are divided by t+_{p_i} t-_{p_j}: the trees fit the gradient of sum_P L_ij / (t+_{p_i}
    t-_{p_j}). Both biases start at 1; after each round's lambdas they are re-estimated from that round's pairs
    (Hu et al.'s alternation of one tree at fixed biases and the biases at fixed scores, section 4: t+_k
    proportional to (S+_k)^(1 / (1 + p)), the minimiser of sum_k S+_k / t+_k + ||t+||_p^p, then normalised;
    the same for t-):

        t+_k = (S+_k / S+_r)^(1 / (1 + p)),  S+_k = sum over pairs with p_i = k of L_ij / t-_{p_j}
        t-_k = (S-_k / S-_r)^(1 / (1 + p)),  S-_k = sum over pairs with p_j = k of L_ij / t+_{p_i}

    p = ``position_bias_norm``, r the first position at which some pair has a row on that side (normally 0: t+_0 =
    t-_0 = 1, as Hu et al. normalise at the first position); a position where no pair has a row on that side
    keeps t = 1. The round's lambdas use the biases of the previous round. With p = 0, clicks of the
    position-based model and relevance independent of the display position, t+_k estimates the propensity ratio
    P(examined at k) / P(examined at r) and t-_k the ratio of the probabilities of no click (tested within 12% and
    8% on 30,000 simulated sessions); p > 0 shrinks the ratios towards 1 (p = 1: their square roots), which
    lowers their variance when a position holds few clicks. From the clicks of one deterministic logging ranker the
    ratios also take in the relevance the logger puts at each position (relevant documents on top: t+ falls faster
    than the propensity, and few top documents go unclicked, so t-_k / t-_0 grows), which p > 0 damps. In
    bench/bench_clicks.py (top 10 of 30 shown, eta 1): with a good logger (linear data) p = 0 drives t- to 250-390
    and test NDCG@10 to 0.56, p = 1 gives 0.80, at least the IPS fit with the true propensities (0.811 with
    norm=True or metric="ranknet", XGBoost's lambdarank_unbiased 0.809); with a poor logger
    (non-linear data) p = 0 recovers the propensities and equals IPS (0.775), and p = 1 under-corrects (0.680, near
    the naive 0.663). No one p suits both: choose it on held-out labelled data. Available with metric "ndcg@k",
    "ndcg" or "ranknet", ties="pessimistic" and truncation=None (the kernel cyrank.lambdarank._unbiased; every pair
    of different labels of a session, O(n_q^2) per session, sessions on OpenMP threads); with norm=True each
    session's debiased lambdas are normalised as LightGBM's (and XGBoost's) are. ``sample_weight`` still
    multiplies each pair by c_i (with sessions merged by cyrank.clicks.click_training_data(aggregate="identical"),
    the number of merged sessions, so that it equals the per-session fit); give the clicks and positions, not IPS
    weights: the biases take their place. The fitted t+ and t- are ``t_plus_`` and ``t_minus_``, indexed by position.

    Where this differs from the implementations read (facts only, no code taken):

    - Hu et al.'s code (github.com/acbull/Unbiased_LambdaMart, a modified LightGBM): the same update, exponent
      ``eta`` = 1 / (1 + p) (default 0.5, i.e. p = 1), positions beyond ``position_bins`` (12) pooled into the
      last; |dZ| divided by (0.01 + |s_i - s_j|) once the scores differ, and sigma = 2 in a table of sigmoids.
      Here every position has its own biases, |dZ| is the metric's, and the sigmoid is exact.
    - XGBoost's ``lambdarank_unbiased`` (src/objective/lambdarank_obj.{h,cc}, read at 2.x; XGBoost 3.2 saves the
      same ``lambdarank_bias_norm`` = 1 as its default, its documentation says 2): the same exponent 1 / (1 +
      lambdarank_bias_norm) and normalisation at position 0, with positions taken as the rows' order within each
      query and only the first 32 tracked (pairs beyond them not divided); positions without pairs get t = 0. Its
      per-position loss is log(1 + exp(+(s_i - s_j))) |dZ| (log(1 / (1 - sigmoid(s_i - s_j)))), which grows as the
      pair is ordered correctly, where Hu et al.'s code and this estimator take the pair's RankNet loss
      log(1 + exp(-sigma (s_i - s_j))) |dZ|. It also samples the pairs (``lambdarank_pair_method="topk"``: the
      top 32 by score against the rest), divides |dZ| by (|s_i - s_j| + 0.01) and normalises each query's lambdas
      by log2(1 + S) / S (``lambdarank_normalization``).
    - The default p = ``position_bias_norm`` = 1 is the default of both.

    Parameters
    ----------
    metric : str, default="ndcg@10"
        The lambdas' metric: "ndcg@k" / "ndcg", "err@k" / "err", "map", or "ranknet". Also the last metric scored
        on ``eval_set`` (fit's ``eval_metric``; "ranknet" is scored by "pairacc", the pairwise accuracy).
    n_estimators : int in [1, 2**31 - 1], default=100
        Boosting rounds (trees).
    learning_rate : float > 0, default=0.1
    num_leaves : int in [2, 131072], default=31
        At most this many leaves per tree (131072: LightGBM's limit).
    min_child_samples : int >= 1 or "auto", default="auto"
        LightGBM's min_data_in_leaf: the fewest training rows a leaf may hold. "auto": min(20, max(1, n // 10))
        for n training rows, LightGBM's default 20 from 200 rows on, and fewer on small sets, where 20 would
        forbid every split (a split needs 2 * min_child_samples rows). An integer with 2 * min_child_samples > n
        is refused (ValueError): no tree could split. The value used is ``min_child_samples_``.
    colsample_bytree : float in (0, 1], default=1.0
        Share of the features each tree may split on (LightGBM's feature_fraction, drawn with ``random_state``).
    sigma : float > 0, default=1.0
        Shape of the pairwise sigmoid.
    truncation : int >= 1 or None, default=None
        Only pairs with one document in the top ``truncation`` positions (LightGBM's lambdarank_truncation_level).
    ties : {"pessimistic", "average", "input"}, default="pessimistic"
        Equal scores (every score at the first round). "pessimistic": lower label first (cyrank.metrics'
        convention), the lambdas of rows with the same score and label averaged (the expectation over their
        orders); "average": the exact expectation of |dZ| over random orders of the tied rows (NDCG and RankNet).
        Neither depends on the row order: the lambdas are computed on the rows in an order fixed by their content,
        so every row gets the same gradient however the rows are permuted. LightGBM bins X as given (a dense X is
        never copied) and sums the float32 gradients of a leaf in float64, in row order; so permuting the training
        rows gives the same trees whenever those sums are exact (as on the tests' data) and LightGBM's bin sample
        holds every row (up to 200,000 rows, its bin_construct_sample_cnt). "input": input order, as LightGBM (the
        model then depends on the row order).
    norm : bool, default=False
        LightGBM's lambdarank_norm (cyrank.lambdarank._lambdas.lambdas). ``metric="ndcg", truncation=30,
        ties="input", norm=True`` is LightGBM's built-in lambdarank objective (for queries of at most 30
        documents; LightGBM's ideal DCG stops at 30).
    position_bias : {None, "joint"}, default=None
        "joint": estimate the position biases t+ (clicked side) and t- (unclicked side) along the trees and divide
        each pair's lambda by t+_{p_i} t-_{p_j} (Hu et al. 2019; above), p the display positions given to
        ``fit(..., position=)``. None: no position bias (fit refuses ``position``).
    position_bias_norm : float >= 0, default=1.0
        p of the regulariser ||t+||_p^p + ||t-||_p^p of the joint estimation: the bias ratios are raised to
        1 / (1 + p). 0: no regularisation (the plain ratios).
    early_stopping_rounds : int >= 1 or None, default=None
        With ``eval_set``: stop after this many rounds in which the first metric (fit's ``eval_metric``) on the
        first eval set other than the training set did not rise, and keep the best round (``best_iteration_``).
        LightGBM's own rule (its early_stopping callback, first_metric_only=False) watches every metric of every
        set and stops at the first that stalls: pass it as ``callbacks=[lightgbm.early_stopping(n, ...)]``.
    n_jobs : int or None, default=None
        LightGBM's threads (None or -1: LightGBM's default, OpenMP's thread count).
    random_state : None, int in [0, 2**31 - 1], numpy RandomState or Generator, default=None
        LightGBM's seed (a C int), from which it draws its other seeds (bagging, feature_fraction, extra_trees...;
        the trees are deterministic without them). None: seed 0; a RandomState or Generator: a seed drawn from it
        at each fit.
    verbose : int >= 0, default=0
        k > 0: a line every k rounds (and at the last) with the seconds since the fit began and every metric on
        every eval set (as ``lightgbm.log_evaluation(k)``, with the time).
    importance_type : {"split", "gain"}, default="split"
        What ``feature_importances_`` counts (LGBMRanker's importance_type): splits on the column, or their gain.
    **kwargs
        Any other LightGBM parameter, by its name or an alias (LGBMRanker's ``**kwargs``; e.g. ``max_depth=6,
        reg_lambda=1.0, subsample=0.8, subsample_freq=1, max_bin=63, min_child_weight=1e-3, extra_trees=True``),
        passed to LightGBM as given and kept by get_params, clone, pickling and model files (values: None, bool,
        number, str or lists of them). Refused at fit with a ValueError saying what to use instead: a name
        LightGBM does not know (it would ignore it, silently here), LightGBM's names of the parameters above
        (:data:`OWN_PARAMS`: num_iterations, eta, min_data_in_leaf, feature_fraction, num_threads, seed, sigmoid,
        verbosity, early_stopping_round, lambdarank_truncation_level, lambdarank_norm and their aliases), and
        those LambdaMART sets or that would be ignored or break it (:data:`REFUSED_PARAMS`: objective, metric,
        eval_at, first_metric_only, the built-in objectives' settings, categorical and linear trees,
        zero_as_missing, prediction, file and network settings). Per-column lists (monotone_constraints,
        feature_contri, max_bin_by_feature, ...) have one entry per column of X. LambdaMART also sets
        deterministic=True, force_row_wise=True and feature_pre_filter=False, which a passed value overrides.

    Attributes
    ----------
    model_string_ : str
        The LightGBM model (``Booster.model_to_string``); saved and loaded with cyrank.io like every model, its
        structure checked (:func:`check_model_string`) before LightGBM reads it.
    features_used_ : int array or None
        The columns of X the trees were grown on, when X was sparse with columns that hold no stored value (the
        trees number the features 0..len - 1 among these); None: every column.
    booster_ : lightgbm.Booster
        Rebuilt from model_string_ on first use.
    n_iter_ : int
        Trees kept.
    best_iteration_ : int
        The round kept (1-based): the best one when early stopping (or a callback's) stopped the fit, else
        n_estimators.
    evals_result_ : dict
        LightGBM's shape: eval set name -> metric name -> float64 array of its value after each round run
        (``{"valid_0": {"ndcg@10": array([...])}}``; "training" for the training set); {} without eval_set.
        Replaces ``history_`` ({"eval": ...}), which model files saved before it still hold.
    best_score_ : dict
        eval set name -> metric name -> its value at best_iteration_ (LGBMRanker's best_score_).
    feature_importances_ : array of shape (n_features_in_,)
        Per column of X: the number of splits on it ("split", int32) or their total gain ("gain", float64), as
        ``booster_.feature_importance``; 0 for columns the trees never saw (features_used_).
    n_features_in_, min_child_samples_ : int
    t_plus_, t_minus_ : float64 arrays of shape (max(position) + 1,)
        With position_bias="joint": the position biases at clicked and unclicked positions as re-estimated after
        the last kept round (best_iteration_ with early stopping; t_plus_[k] for display position k; 1 at the first
        position and at positions without pairs).
    """

    def __init__(self, metric="ndcg@10", n_estimators=100, learning_rate=0.1, num_leaves=31,
                 min_child_samples="auto", colsample_bytree=1.0, sigma=1.0, truncation=None, ties="pessimistic",
                 norm=False, position_bias=None, position_bias_norm=1.0, early_stopping_rounds=None, n_jobs=None,
                 random_state=None, verbose=0, importance_type="split", **kwargs):
        self.metric = metric
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.colsample_bytree = colsample_bytree
        self.sigma = sigma
        self.truncation = truncation
        self.ties = ties
        self.norm = norm
        self.position_bias = position_bias
        self.position_bias_norm = position_bias_norm
        self.early_stopping_rounds = early_stopping_rounds
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.importance_type = importance_type
        self._lightgbm_params = dict(kwargs)

    _check = check_params
    _needs = "pairs within queries"
    _model_schema = {**_MART._model_schema,
                     **dict.fromkeys(("t_plus_", "t_minus_"),
                                     lambda p: "float[*]" if p.get("position_bias") == "joint" else None)}
    _stale_attributes = ("history_", "t_plus_", "t_minus_")

    def fit(self, X, y, qid=None, eval_set=None, sample_weight=None, *, position=None, eval_names=None,
            eval_metric=None, eval_at=None, callbacks=None):
        """Grow the trees on (X, y) grouped by ``qid``.

        ``position``: with ``position_bias="joint"``, the display position of each row in its session (an integer
        >= 0, 0 = top; one per row, as LightGBM's Dataset ``position``), the index of its biases t+ and t- (class
        docstring); refused otherwise. ``sample_weight``: None, a number or one weight >= 0 per row, the weight
        c_i of the pairs where row i is preferred (class docstring). ``eval_set``: one (X, y, qid) tuple or a list
        of them (LightGBM's eval_set), each scored after every round with ``eval_metric`` (unweighted;
        :func:`eval_metric_names` gives the names and their order, ``eval_at`` the cut-offs), named by
        ``eval_names`` (default "valid_<i>", and "training" for the fit's own X and y); the values are
        ``evals_result_``. ``callbacks``: LightGBM's callbacks (lightgbm.log_evaluation, early_stopping,
        record_evaluation, reset_parameter, or your own), which see cyrank's metrics, higher is better, as
        LightGBM's evaluation results."""
        return self._fit_trees(X, y, qid, eval_set, sample_weight, eval_names, eval_metric, eval_at, callbacks,
                               position=position)

    def _prepare(self, checked, X, y, qid, sample_weight, position=None):
        position_bias, bias_norm = checked[6]
        if position_bias is None:
            if position is not None:
                raise ValueError("fit(..., position=) is read only with position_bias='joint' (the joint estimation "
                                 "of the position biases); set it, or leave position out")
        else:
            if position is None:
                raise ValueError("position_bias='joint' needs the display position of every row: fit(X, y, qid, "
                                 "position=rank - 1)")
            position = check_position(position, X.shape[0])
            name, _ = parse_metric(self.metric)
            if name not in ("ndcg", "ranknet"):
                raise ValueError(f"position_bias='joint' takes metric 'ndcg@k', 'ndcg' or 'ranknet', got "
                                 f"{self.metric!r}")
            for option, value, default in (("truncation", self.truncation, None), ("ties", self.ties, "pessimistic")):
                if not (value is default or value == default):
                    raise ValueError(f"position_bias='joint' takes {option}={default!r} only (its kernel, "
                                     f"cyrank.lambdarank._unbiased), got {option}={value!r}")
        pairs = _Pairs(y, qid, metric=self.metric, sigma=checked[5], truncation=self.truncation, ties=self.ties,
                       norm=self.norm, X=X, sample_weight=sample_weight)
        check_metric_data(self.metric, y, qid)
        if position_bias == "joint":
            return _JointGradients(pairs, position, bias_norm)
        return _LambdaGradients(pairs)


_LISTWISE_OBJECTIVE = ("it configures LightGBM's built-in objectives, which ListwiseMART does not use (its gradients "
                       "are cyrank's listwise loss), so it would be ignored")
# ListwiseMART's LightGBM parameter tables: LambdaMART's, less the lambdas' own settings (refused here instead)
LISTWISE_OWN_PARAMS = {k: v for k, v in OWN_PARAMS.items() if v not in ("truncation", "norm", "sigma")}
LISTWISE_REFUSED_PARAMS = {
    **REFUSED_PARAMS,
    "objective": "ListwiseMART's objective is cyrank's listwise loss: choose it with loss='listnet' (target='exp', "
                 "'gain' or 'xendcg': target='xendcg' is LightGBM's rank_xendcg) or loss='listmle'",
    **dict.fromkeys(("lambdarank_truncation_level", "lambdarank_norm", "sigmoid"), _LISTWISE_OBJECTIVE),
}


class ListwiseMART(_MART):
    """Boosted trees trained on a listwise loss: LightGBM grows each tree on the per-document gradient and diagonal
    Hessian of ListNet / softmax cross-entropy or ListMLE at the current scores, through the custom-objective path
    of :class:`LambdaMART` (same LightGBM parameters, eval sets, callbacks, model files).

    The losses are sums over queries (f the trees' scores, w_i the ``sample_weight`` of row i, 1 without):

    - ``loss="listnet"``: ListNet's top-one cross-entropy (Cao, Qin, Liu, Tsai & Li, ICML 2007, section 4), the
      softmax cross-entropy L_q = sum_i w_i p_i (LSE_q(f) - f_i), LSE_q = log sum_{j in q} exp(f_j), with the target
      p over the query's rows by ``target``: "exp" (default, Cao et al.'s phi = exp: p_i = exp(y_i) / sum_j
      exp(y_j)), "gain" (p_i = (2^y_i - 1) / sum_j (2^y_j - 1); a query of labels 0 only contributes nothing), or
      "xendcg" (p_i = (2^y_i - g_i) / sum_j (2^y_j - g_j), g_i ~ U(0, 1): XE-NDCG, Bruch, "An Alternative Cross
      Entropy Loss for Learning-to-Rank", WWW 2021, section 4; LightGBM's ``rank_xendcg``). Gradient (mass_q =
      sum_i w_i p_i, s the softmax of f over the query): mass_q s_i - w_i p_i; Hessian diagonal
      mass_q s_i (1 - s_i), exact.
    - ``loss="listmle"``: ListMLE (Xia, Liu, Wang, Zhang & Li, ICML 2008, section 3.3), the Plackett-Luce negative
      log-likelihood of the label order, summed over the first ``top_k`` positions (None: all), equal labels by
      ``ties``: "efron" (default; Efron 1977: position t, r-th of its tie group G of size m, has denominator D_t =
      sum_{j below G} exp f_j + (1 - r/m) sum_{j in G} exp f_j and term (1/m) sum_{j in G} w_j (log D_t - f_j),
      the expected denominator over the orders of the group) or "breslow" (Breslow 1974: D_t = sum_{j below G}
      exp f_j + sum_{j in G} exp f_j for every t of G). Gradient and Hessian diagonal exact: with q_tj = a_tj
      exp(f_j) / D_t (a_tj the share of row j in D_t: 1 below G(t), 1 - r/m inside it), the gradient is
      sum_t c_t q_tj - w_j k_G / m and the Hessian diagonal sum_t c_t q_tj (1 - q_tj), c_t = (1/m) sum_{j in G(t)}
      w_j, k_G the positions of G within top_k.

    The gradients and Hessian diagonals come from the kernel of the linear estimators
    (:class:`cyrank.listwise.DocGradients`, O(n) per query once the label order is laid out at fit; every
    log-sum-exp shifted by its maximum, safe for score gaps of 1e3), computed on the rows in an order fixed by their
    content, so that a row's gradient does not depend on the row order. The trees are Newton steps on them
    (LightGBM's leaf value -sum(grad) / (sum(hess) + lambda_l2)).

    ``target="xendcg"`` on trees draws a fresh g every boosting round, as LightGBM's rank_xendcg does: round r
    uses the r-th draw ``rng.random(n)`` over the rows in input order of ``rng = np.random.default_rng(seed)``,
    seed = ``random_state`` (None: 0), so a fit is reproducible by its random_state, and round 0's g is the one the
    linear estimators fix for the same integer random_state (their objective is exact with one draw). ``objective_``
    is the loss of the final scores with that first draw.

    ``newton_terms`` (ListNet): the trees' leaf values -sum(grad) / sum(hess) are Newton steps on the Hessian's
    diagonal. With newton_terms = T > 1 the gradient handed to LightGBM is instead g~ = sum_{t < T} (O D^-1)^t g,
    g the exact gradient and H = D - O each query's Hessian (D its diagonal, O_kj = mass_q s_k s_j): the truncated
    Neumann series of the Newton direction H^+ g = D^-1 sum_t (O D^-1)^t g, so that a leaf value approximates a
    Newton step on the whole query's Hessian. Term t + 1 is s_i sum_{j != i} (term t)_j / (1 - s_j), O(n) per
    query. The Hessian diagonal handed over is the exact one either way.

    Differences from LightGBM's rank_xendcg (src/objective/rank_objective.hpp, RankXENDCG, LightGBM 4): its
    gradient is this series with three terms (newton_terms=3; its "first, second and third order terms", summed in
    float32); its Hessian is rho_i (1 - rho_i), the same as ListwiseMART's with unit weights; it trains on queries
    of equal labels (their target is the noise) and gives queries of one row gradient and Hessian 0, as
    ListwiseMART does; init score 0 and plain Newton leaves in both. Its noise comes from a per-query linear
    congruential generator seeded objective_seed + query index (multiples of 2^-15) instead of numpy's. With
    target="xendcg", newton_terms=3 and that generator, the kernel grows rank_xendcg's trees (same splits, leaves
    within float32 rounding; tests/test_listwise_trees.py). Test NDCG@10 with bench/bench_listwise_trees.py's trees,
    paired seeds (mean +- standard error): on the embedded data (900 seeds) the generator changes nothing (+0.0003
    +- 0.0004) and the series adds 0.0024 +- 0.0004; on LETOR-style generated data (2e4 x 136, 55 seeds) the series
    costs 0.0034 +- 0.0011. The default stays newton_terms=1: the trees descend the loss written above, with its
    exact gradient.

    Parameters
    ----------
    loss : {"listnet", "listmle"}, default="listnet"
    target : {"exp", "gain", "xendcg"} or None, default=None
        ListNet's target distribution; None: "exp". Refused with loss="listmle".
    ties : {"efron", "breslow"} or None, default=None
        ListMLE's rule for equal labels; None: "efron". Refused with loss="listnet".
    top_k : int >= 1 or None, default=None
        ListMLE's truncation to the first top_k positions; None: all. Refused with loss="listnet".
    newton_terms : int >= 1, default=1
        ListNet only: the gradient handed to the trees is the Newton series of the exact gradient to this many
        terms (above); 1: the exact gradient; 3: what LightGBM's rank_xendcg hands its trees. Refused (other than
        1) with loss="listmle".
    metric : str, default="ndcg@10"
        The metric scored on ``eval_set`` (after fit's ``eval_metric``, as LambdaMART's metric) and watched by
        ``early_stopping_rounds`` when fit has no eval_metric. It does not change the gradients.
    n_estimators : int in [1, 2**31 - 1], default=100
    learning_rate : float > 0, default=0.1
    num_leaves : int in [2, 131072], default=31
    min_child_samples : int >= 1 or "auto", default="auto"
    colsample_bytree : float in (0, 1], default=1.0
    early_stopping_rounds : int >= 1 or None, default=None
    n_jobs : int or None, default=None
    random_state : None, int in [0, 2**31 - 1], numpy RandomState or Generator, default=None
        As LambdaMART's; it also seeds the xendcg draws.
    verbose : int >= 0, default=0
    importance_type : {"split", "gain"}, default="split"
        The parameters above mean what they mean for :class:`LambdaMART`.
    **kwargs
        LightGBM parameters, as LambdaMART's; LightGBM's sigmoid, lambdarank_truncation_level and lambdarank_norm
        are refused (they configure its lambdarank objective).

    Attributes
    ----------
    objective_ : float
        The listwise loss (above) of the training scores; the other attributes are LambdaMART's.
    """

    _check = check_listwise_params
    _needs = "lists within queries"
    _own_params = LISTWISE_OWN_PARAMS
    _refused_params = LISTWISE_REFUSED_PARAMS

    def __init__(self, loss="listnet", target=None, ties=None, top_k=None, newton_terms=1, metric="ndcg@10",
                 n_estimators=100, learning_rate=0.1, num_leaves=31, min_child_samples="auto", colsample_bytree=1.0,
                 early_stopping_rounds=None, n_jobs=None, random_state=None, verbose=0, importance_type="split",
                 **kwargs):
        self.loss = loss
        self.target = target
        self.ties = ties
        self.top_k = top_k
        self.newton_terms = newton_terms
        self.metric = metric
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.num_leaves = num_leaves
        self.min_child_samples = min_child_samples
        self.colsample_bytree = colsample_bytree
        self.early_stopping_rounds = early_stopping_rounds
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.importance_type = importance_type
        self._lightgbm_params = dict(kwargs)

    def _prepare(self, checked, X, y, qid, sample_weight):
        loss, target, ties, top_k, newton_terms = checked[5]
        return _ListwiseGradients(y, qid, X, loss=loss, target=target, ties=ties, top_k=top_k,
                                  sample_weight=sample_weight, seed=random_seed(self.random_state),
                                  newton_terms=newton_terms)
