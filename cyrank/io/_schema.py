"""The schema language of model files: what fitted attributes a registered class's model file may hold
(``_model_schema``), checked by :func:`cyrank.io.load_model` before any attribute is set."""
import numbers
import re

import numpy as np
import scipy.sparse as sp

from .._validation import check_sparse_structure


# ------------------------------------------------------------------------------------ model-file schema
# A registered class may declare ``_model_schema``: fitted attribute name -> rule. A rule is a spec string (the
# attribute is required in a fitted model) or a function of the parameters returning the spec, or None when the
# attribute must be absent for those parameters. A spec ending in "?" may be absent. Specs:
#   "float", "int", "bool", "str", optionally ">= v" / "> v" (scalars, finite)
#   "float[d]", "int[m, d]", "bool[*]", "any[c]": arrays (float arrays float64 and finite; any = numbers or
#       strings); each
#       dimension is a number, "*", or a symbol bound on first use and equal everywhere after it ("d" is
#       n_features_in_; "str[d]" is an array of strings); "or csr" also admits a CSR matrix (structure checked); "in [0, d)" bounds the values
#   "dict": str keys, 1-d numeric arrays as values;  "dicts": str keys, "dict"s as values (LightGBM's evals_result_:
#       data set -> metric -> value per round);  "...|None": None is also allowed
_SPEC = re.compile(r"(?P<kind>float|int|bool|str|any|dicts|dict)(?:\[(?P<dims>[^\]]*)\])?(?P<csr> or csr)?"
                   r"(?: *(?P<op>>=|>) *(?P<low>[-+.\de]+))?(?: in \[0, (?P<high>\w+)\))?"
                   r"(?P<none>\|None)?(?P<optional>\?)?$")
_ARRAY_KIND = {"float": "f", "int": "iu", "bool": "b", "any": "biufU", "str": "UO"}
# attributes every class's model file may hold without declaring them: the column names of a DataFrame fit
# (cyrank._base.remember_feature_names)
_COMMON_SCHEMA = {"feature_names_in_": "str[d]?"}


def _schema_rules(cls, params):
    """{name: (spec match, optional)} of ``cls`` for these parameters (None: the class declares no schema)."""
    schema = getattr(cls, "_model_schema", None)
    if schema is None:
        return None
    rules = {}
    for name, rule in {**_COMMON_SCHEMA, **schema}.items():
        spec = rule(params) if callable(rule) else rule
        if spec is not None:
            m = _SPEC.match(spec)
            if m is None:
                raise TypeError(f"{cls.__name__}._model_schema[{name!r}]: bad spec {spec!r}")
            rules[name] = m
    return rules


def _check_attribute(name, value, m, dims, bad):
    """Check one loaded attribute against its spec match ``m``; ``dims`` binds the dimension symbols."""
    kind = m["kind"]
    if value is None:
        if m["none"]:
            return
        raise bad(f"attribute {name} is None")
    if kind in ("dict", "dicts"):
        inner = list(value.values()) if kind == "dicts" and isinstance(value, dict) else [value]
        if not (isinstance(value, dict) and all(isinstance(d, dict) and all(
                isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind in "biuf" for v in d.values())
                for d in inner)):
            raise bad(f"attribute {name} must be a dict of {'dicts of ' if kind == 'dicts' else ''}1-d numeric "
                      "arrays")
        return
    if m["dims"] is None:  # scalar
        ok = {"float": lambda v: isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
                      and np.isfinite(v),
              "int": lambda v: isinstance(v, numbers.Integral) and not isinstance(v, (bool, np.bool_)),
              "bool": lambda v: isinstance(v, (bool, np.bool_)),
              "str": lambda v: isinstance(v, str)}[kind]
        if not ok(value):
            raise bad(f"attribute {name} = {value!r:.60} is not a{'n' if kind == 'int' else ''} {kind}")
        values = np.asarray([value], dtype=np.float64) if kind in ("float", "int") else None
    else:
        if sp.issparse(value):
            if not m["csr"] or value.format != "csr":
                raise bad(f"attribute {name} is a sparse {value.format} matrix; expected {m.string.rstrip('?')}")
            try:
                check_sparse_structure(value, f"attribute {name}")
            except ValueError as exc:
                raise bad(str(exc)) from None
            values = value.data
        elif isinstance(value, np.ndarray):
            if value.dtype.kind not in _ARRAY_KIND[kind] or (kind == "float" and value.dtype != np.float64):
                raise bad(f"attribute {name} has dtype {value.dtype}; expected {kind}"
                          f"{'64' if kind == 'float' else ''} values")
            if kind == "str" and not all(isinstance(v, str) for v in value.flat):
                raise bad(f"attribute {name} holds values that are not strings")
            values = value
        else:
            raise bad(f"attribute {name} is a {type(value).__name__}; expected an array")
        shape = [t.strip() for t in m["dims"].split(",")]
        if len(shape) != value.ndim:
            raise bad(f"attribute {name} has shape {value.shape}; expected [{m['dims']}]")
        for axis, (sym, size) in enumerate(zip(shape, value.shape)):
            want = int(sym) if sym.isdigit() else dims.setdefault(sym, size) if sym != "*" else size
            if size != want:
                raise bad(f"attribute {name} has shape {value.shape}: axis {axis} ({sym}) should be {want}, as in "
                          "the other attributes")
        if kind == "float" and not np.all(np.isfinite(values)):
            raise bad(f"attribute {name} holds NaN or infinity")
    if m["low"] is not None and values is not None and values.size:
        low = float(m["low"])
        if np.any(values < low) or (m["op"] == ">" and np.any(values == low)):
            raise bad(f"attribute {name} must be {m['op']} {m['low']}")
    if m["high"] is not None and values is not None and values.size:
        high = dims.get(m["high"])
        if high is None or np.any(values < 0) or np.any(values >= high):
            raise bad(f"attribute {name} must lie in [0, {m['high']}) = [0, {high})")


def _check_against_schema(est, values, path):
    """Refuse a model whose parameters are invalid or whose attributes do not fit the class's schema."""
    cls = type(est)

    def bad(msg):
        return ValueError(f"{path}: not a valid {cls.__name__} model file ({msg})")

    check = getattr(est, "_check_params", None)
    if callable(check):
        try:
            check()
        except (ValueError, TypeError) as exc:
            raise bad(f"invalid parameter: {exc}") from None
    rules = _schema_rules(cls, est.get_params(deep=False))
    if rules is None or not values:  # no schema declared, or an unfitted estimator
        return
    extra = sorted(set(values) - set(rules))
    if extra:
        raise bad(f"unknown attribute(s) {', '.join(extra)} for these parameters")
    missing = sorted(n for n, m in rules.items() if n not in values and not m["optional"])
    if missing:
        raise bad(f"missing attribute(s) {', '.join(missing)}")
    dims = {}
    if "n_features_in_" in values:
        _check_attribute("n_features_in_", values["n_features_in_"], rules["n_features_in_"], dims, bad)
        dims["d"] = int(values["n_features_in_"])
    for name, value in values.items():
        _check_attribute(name, value, rules[name], dims, bad)
    consistent = getattr(cls, "_check_model_attributes", None)  # relations the specs cannot state
    if callable(consistent):
        try:
            consistent(values)
        except (ValueError, TypeError) as exc:
            raise bad(str(exc)) from None
