"""Command line: cyrank demo | fit | predict | eval | verify.

    cyrank demo                                   every solver on small real data: test metrics, fit times, and
                                                  the gap to the exact cvxpy optimum on a sub-problem
    cyrank fit SOLVER TRAIN.svm -o MODEL.npz      train (-p NAME=VALUE sets a hyper-parameter, -t N the threads,
                                                  --valid FILE a validation set for early stopping, --weights
                                                  FILE one weight per training row); SOLVER
                                                  labelrank reads multilabel files (l1,l2,... idx:val ...), mlr
                                                  class-label files (label idx:val ...)
    cyrank predict MODEL.npz DATA.svm [-o FILE]   one score per line (--format trec --tag NAME: a TREC run,
                                                  documents named by DATA's '#docid = X' comments)
    cyrank eval DATA.svm (--model M | --scores S) ranking metrics of a model or a score file, with their rules
    cyrank eval --run RUN --qrels QRELS           ranking metrics of a TREC run (trec_eval's convention unless
                                                  --convention says otherwise); -q per query, --format json
    cyrank verify SOLVER [DATA.svm]               fast solver vs the cvxpy reference, objectives side by side

Errors are one line on stderr (exit status 2); cyrank --debug ... shows the Python traceback instead.
"""
import argparse
import importlib.util
import sys
import time

import numpy as np

from . import _registry, __version__

DEFAULT_METRICS = ("ndcg@10", "err@10", "map", "pairacc")
CONVENTIONS = ("none", "trec_eval", "ranx", "ranx_burges", "lightgbm", "letor4")  # cyrank.metrics' presets


# ---------------------------------------------------------------------------------------------- helpers
def parse_value(text):
    """A ``--param`` value: int (also 1e6: an integral number without a decimal point), float, true/false, none,
    or the string itself (never evaluated)."""
    low = text.lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            value = cast(text)
        except ValueError:
            continue
        if cast is float and "." not in text and value.is_integer() and abs(value) < 2**63:
            return int(value)  # 1e6: an integer written in exponent form (num_leaves=1e6, max_iter=1e4)
        return value
    return text


def parse_params(pairs):
    params = {}
    for pair in pairs or ():
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise ValueError(f"--param expects name=value, got {pair!r}")
        params[name.strip()] = parse_value(value.strip())
    return params


def metric_function(spec):
    """``"ndcg@10"`` -> (label, f(y, s, qid)): :func:`cyrank.metrics.metric_by_name`."""
    from .metrics import metric_by_name

    try:
        return spec, metric_by_name(spec)
    except ValueError as exc:
        raise ValueError(f"-m/--metric {exc}") from None


def evaluate(y, scores, qid, metric_specs):
    return {label: f(y, scores, qid) for label, f in map(metric_function, metric_specs)}


def evaluate_per_query(data, metric_specs, convention=None):
    """``{metric: (mean, {query id (str): value})}`` of ``data``: ``(qrels, run)`` dicts or ``(y, scores, qid)``
    arrays, through cyrank.metrics' per-query API (``convention`` passed on when set)."""
    options = {} if convention is None else {"convention": convention}
    arrays = len(data) == 3
    results = {}
    for label, f in map(metric_function, metric_specs):
        mean, per_query = f(*data, return_per_query="dict" if arrays else True, **options)
        results[label] = (float(mean), {str(q): float(v) for q, v in per_query.items()})
    return results


def print_table(header, rows, out=None):
    """Fixed-width table; floats with 4 decimals (times with 3 significant digits)."""
    out = out or sys.stdout

    def fmt(v):
        if isinstance(v, float):
            return f"{v:.4f}" if abs(v) < 1e4 else f"{v:.4g}"
        return str(v)

    cells = [[fmt(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths)), file=out)
    print("  ".join("-" * w for w in widths), file=out)
    for r in cells:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)), file=out)


# A data file's largest feature index sets n_features, and every fit allocates dense vectors of that length
# (a linear model keeps about 16, LightGBM a few hundred bytes per feature): a 40-byte file naming feature 2**26
# would take gigabytes for columns that are all zero. Without --max-features, the command line admits at most
# max(MAX_FEATURES_FLOOR, FEATURES_PER_VALUE * the stored values of the file) features, so those vectors stay
# proportional to the file.
MAX_FEATURES_FLOOR = 1 << 20
FEATURES_PER_VALUE = 8


def feature_limit(X, max_features=None):
    return max_features if max_features is not None else max(MAX_FEATURES_FLOOR, FEATURES_PER_VALUE * X.nnz)


def check_feature_count(X, path, max_features=None, option="--max-features"):
    """ValueError naming the line whose feature index implies more features than :func:`feature_limit`."""
    limit = feature_limit(X, max_features)
    if X.shape[1] <= limit:
        return
    from .io import feature_beyond

    name, line, _ = feature_beyond(path, X, limit)
    raise ValueError(f"{name}, line {line}: a feature index implies {X.shape[1]} features, but "
                     f"the file stores only {X.nnz} values; every fit keeps dense vectors of n_features numbers (a "
                     f"linear model about 16, LightGBM hundreds of bytes per feature), here about "
                     f"{128 * X.shape[1] / 2**30:.2g} GiB or more for columns that are all zero (the limit is "
                     f"max({MAX_FEATURES_FLOOR}, {FEATURES_PER_VALUE} x stored values) = {limit}). Renumber the "
                     f"features compactly, or pass {option} {X.shape[1]} if this many is intended")


def load_data(path, n_features=None, max_features=None, what=None, doc_ids=False):
    """(X, y, qid) of a LETOR/SVMlight file (and its document ids with ``doc_ids``). ``n_features`` (a model's or
    the training file's) fixes the width; without it the width implied by the file is bounded by
    :func:`check_feature_count`."""
    from .io import load_svmlight

    ids = {"return_doc_ids": True} if doc_ids else {}
    if n_features is None:
        loaded = load_svmlight(path, **ids)
        check_feature_count(loaded[0], path, max_features)
        return loaded
    try:
        return load_svmlight(path, n_features=n_features, **ids)
    except ValueError as exc:
        if "n_features was set to" not in str(exc):
            raise
        raise ValueError(f"{path} has feature indices beyond the {n_features} features of {what or 'the model'}; "
                         "score or validate with data that uses the same features") from None


# Why -p refuses an argument of a family's functional solve that is not an estimator parameter (the spec's
# solve_only: a model file holds only the estimator's parameters). tests/test_cli_errors.py checks the table of
# estimators against the estimators and the solves.
WHY_NOT = {
    "coef_init": "a starting point (an array) of the functional layer",
    "offset": "a per-row offset array of the functional layer",
    "options": "an Options object of the functional layer (set solver options in Python)",
    "joint": "joint features are an array (n x n_labels x p) given to fit in Python",
    "relevance": "a relevance matrix given to fit in Python",
    "irrelevant": "an irrelevance matrix given to fit in Python",
    "eval_set": "a validation set is a file: use --valid FILE (lambdarank and lambdamart)",
    "sample_weight": "weights are a file: use --weights FILE (one weight per line, line k for row k)",
}
DATA_ARGUMENTS = ("X", "y", "qid", "G", "sample_weight")


def takes_any_param(spec):
    """Whether the solver's estimator takes any keyword (its ``__init__`` has ``**kwargs``, as LambdaMART passes
    LightGBM's parameters on): then ``-p`` accepts any name, and the estimator checks it."""
    import inspect

    if spec.solve:
        return False
    init = inspect.signature(spec.estimator_class.__init__).parameters.values()
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in init)


def accepted_params(spec):
    """The names ``-p`` accepts for a solver: its estimator's hyper-parameters (for the functional families, the
    keyword arguments of solve that the estimator also has; found without importing scikit-learn). An estimator
    taking ``**kwargs`` accepts other names too (:func:`takes_any_param`)."""
    import inspect

    if spec.solve:
        names = inspect.signature(spec.solve_function).parameters
        skip = (*DATA_ARGUMENTS, *spec.solve_only)
        return sorted(n for n in names if n not in skip)
    return sorted(spec.estimator_class().get_params())


def check_param_names(spec, params, accepted):
    """ValueError for a ``-p`` name the solver's estimator does not take (any name passes for an estimator with
    ``**kwargs``, except the data arguments of :data:`WHY_NOT`)."""
    open_ended = takes_any_param(spec)
    for name in params:
        if name in accepted:
            continue
        if name in ("eval_set", "sample_weight"):
            raise ValueError(f"-p {name}: {WHY_NOT[name]}")
        if name in WHY_NOT:
            raise ValueError(f"-p {name}: {WHY_NOT[name]}, not a hyper-parameter, so a model file cannot hold it. "
                             f"-p accepts for {spec.name}: {', '.join(accepted)}")
        if open_ended:
            continue
        raise ValueError(f"-p {name}: {spec.name} has no parameter {name!r}; -p accepts: {', '.join(accepted)}")


def check_threads(threads):
    """-t/--threads as a checked thread count (None: unchanged)."""
    from ._validation import check_n_jobs

    if threads is not None and (threads == 0 or threads < -1):
        raise ValueError(f"-t/--threads must be a number of threads >= 1, or -1 for every core; got {threads}")
    return check_n_jobs(threads)


def read_scores(path, data, n):
    """The scores of a score file (one number per line, as ``cyrank predict`` writes), checked against DATA."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numpy's "input contained no data": reported below with the file name
            scores = np.loadtxt(path, dtype=np.float64, ndmin=1)
    except OSError as exc:
        raise OSError(f"--scores {path}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise ValueError(f"--scores {path}: not a score file ({exc}); it must hold one number per line, as cyrank "
                         "predict writes") from None
    if scores.ndim != 1:
        raise ValueError(f"--scores {path}: {scores.shape[1]} numbers per line; a score file holds one score per line")
    bad = np.flatnonzero(~np.isfinite(scores))
    if bad.size:
        raise ValueError(f"--scores {path}: score number {bad[0] + 1} is {scores[bad[0]]}; scores must be finite")
    if scores.shape[0] != n:
        raise ValueError(f"--scores {path} has {scores.shape[0]} scores but {data} has {n} rows; give one score per "
                         "row of DATA, in its order")
    return scores


def small_problem(X, y, qid, n_queries=6, n_features=6, seed=0):
    """A small sub-problem of real data the reference solves in seconds: a few queries, the densest features."""
    from ._queries import QueryGroups

    rng = np.random.default_rng(seed)
    groups = QueryGroups(qid, y)
    multi = groups.ids[groups.n_levels > 1]
    chosen = rng.choice(multi, size=min(n_queries, len(multi)), replace=False)
    rows = np.flatnonzero(np.isin(qid, chosen))
    Xs = X[rows]
    nnz = np.asarray((Xs != 0).sum(axis=0)).ravel()
    cols = np.sort(np.argsort(-nnz, kind="stable")[:n_features])
    Xs = Xs[:, cols]
    Xs = Xs.toarray() if hasattr(Xs, "toarray") else np.asarray(Xs)
    return Xs, y[rows], qid[rows]


def print_gap(name, objective, t_fast, detail, sol, t_ref, out, note=""):
    """Print cyrank's and the reference's objectives side by side; return the relative objective gap."""
    print_table(["solver", "objective", "time_s", "detail"],
                [["cyrank " + name, f"{objective:.12g}", f"{t_fast:.3g}", detail],
                 ["reference (cvxpy)", f"{sol.objective:.12g}", f"{t_ref:.3g}", f"{sol.solver} {sol.status}"]],
                out=out)
    gap = abs(objective - sol.objective) / max(1.0, abs(sol.objective))
    print(f"relative objective gap |f_cyrank - f_ref| / max(1, |f_ref|) = {gap:.2e}{note}", file=out)
    return gap


def verify_solver(spec, X, y, qid, params, out=None, sample_weight=None):
    """Fit ``spec``'s estimator and the reference on the same problem (weighted by ``sample_weight``, if given);
    print both objectives; return the gap."""
    out = out or sys.stdout
    weights = {} if sample_weight is None else {"sample_weight": sample_weight}
    est = spec.make(**params)
    t0 = time.perf_counter()
    est.fit(X, y, qid=qid, **weights)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    sol = spec.solve_reference(est, X, y, qid, **weights)
    t_ref = time.perf_counter() - t0
    weighted = "" if sample_weight is None else ", weighted"
    print(f"problem: {X.shape[0]} rows, {X.shape[1]} features, {np.unique(qid).size} queries{weighted}; params "
          f"{params}", file=out)
    return print_gap(spec.name, est.objective_, t_fast, f"n_iter={est.n_iter_}", sol, t_ref, out)


# ---------------------------------------------------------------------------------------------- commands
def demo_names():
    """The rankers ``cyrank demo`` trains on the ranking data (LambdaMART only when LightGBM is installed), and the
    families with their own data sets (mlr: Wine; labelrank: a multilabel set)."""
    return ([name for name, spec in _registry.SOLVERS.items() if spec.demo],
            [name for name, spec in _registry.SOLVERS.items() if not spec.demo])


def cmd_demo(args):
    from .datasets import load_lightgbm_rank

    rankers, others = demo_names()
    names = args.solvers.split(",") if args.solvers else [*rankers, *others]
    for name in names:  # MLR and LabelRankBoost have their own demos; the others take the ranking data
        if name not in (*rankers, *others):
            raise ValueError(f"--solvers: {name!r} is not in the demo; choose from {', '.join([*rankers, *others])}")
    skipped = []
    if "lambdamart" in names and importlib.util.find_spec("lightgbm") is None:
        names = [n for n in names if n != "lambdamart"]
        skipped.append("lambdamart (LightGBM is not installed: pip install 'cyrank[lightgbm]')")

    Xtr, ytr, qtr = load_lightgbm_rank("train")
    Xte, yte, qte = load_lightgbm_rank("test")
    print(f"cyrank {__version__} demo: embedded LightGBM lambdarank example data (MIT, Microsoft)")
    print(f"train {Xtr.shape[0]} docs / {np.unique(qtr).size} queries, test {Xte.shape[0]} docs / "
          f"{np.unique(qte).size} queries, {Xtr.shape[1]} features")
    print("metrics on the test set, mean over queries; queries without a relevant document are dropped "
          "(empty='drop'), score ties broken pessimistically; NDCG with the exponential gain 2**y - 1\n")
    specs = [_registry.get(name) for name in names if name in rankers]
    header = ["model", "fit_s", "n_iter", "converged", *DEFAULT_METRICS]
    rows = []
    rng = np.random.default_rng(0)
    rows.append(["random scores", 0.0, "-", "-", *evaluate(yte, rng.random(len(yte)), qte, DEFAULT_METRICS).values()])
    for spec in specs:
        est = spec.make(**{**spec.demo_params, "verbose": args.verbose})
        t0 = time.perf_counter()
        est.fit(Xtr, ytr, qid=qtr)
        elapsed = time.perf_counter() - t0
        rows.append([spec.name, elapsed, est.n_iter_, est.converged_,
                     *evaluate(yte, est.predict(Xte), qte, DEFAULT_METRICS).values()])
    if specs:
        print_table(header, rows)
        params = [f"{s.name} {s.demo_params}" for s in specs if s.demo_params]
        print("parameters: " + "; ".join(params))
    exact = importlib.util.find_spec("cvxpy") is not None
    for spec in specs:
        if not (spec.reference and exact):
            continue
        print(f"\n{spec.name}: gap to the exact cvxpy optimum on a small sub-problem of the training data")
        verify_solver(spec, *small_problem(Xtr, ytr, qtr), spec.small_params)
    no_reference = [s.name for s in specs if not s.reference]
    if no_reference:
        print(f"\n({', '.join(no_reference)}: not convex, so no exact optimum to compare with)")
    if "mlr" in names:
        demo_mlr(exact=exact)
    if "labelrank" in names:
        demo_labelrank(exact=exact)
    if not exact:
        print("\n(cvxpy is not installed: the gaps to the exact optimum are skipped; pip install 'cyrank[reference]')")
    for what in skipped:
        print(f"\nskipped: {what}")
    return 0


def demo_labelrank(out=None, exact=True):
    """LabelRankBoost on scikit-learn's make_multilabel_classification (500 points, 20 features, 6 labels;
    400 train / 100 test): the four label-ranking errors of its scores against random scores, then the gap to
    the exact cvxpy optimum on a tiny sub-problem."""
    from .datasets import multilabel_dataset
    from .labelrank import LabelRankBoost
    from .metrics import label_ranking_error

    out = out or sys.stdout
    X, Y = multilabel_dataset(n_samples=500, n_features=20, n_classes=6, n_labels=2, random_state=0)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    params = {"alpha": 1.0}
    t0 = time.perf_counter()
    model = LabelRankBoost(**params).fit(X[:400], Y[:400])
    elapsed = time.perf_counter() - t0
    random_scores = np.random.default_rng(0).random((100, Y.shape[1]))
    kinds = ("zero_one", "disagreement", "domination", "dominated")
    print(f"\nlabelrank: LabelRankBoost (Dekel, Manning & Singer 2003) on make_multilabel_classification (500 "
          f"points, 20 features, 6 labels; z-scored, 400 train / 100 test); label-ranking errors on the test points; "
          f"params {params}", file=out)
    rows = [["random scores", 0.0, "-", "-", *(label_ranking_error(Y[400:], random_scores, k) for k in kinds)],
            ["labelrank", elapsed, model.n_iter_, model.converged_,
             *(label_ranking_error(Y[400:], model.predict(X[400:]), k) for k in kinds)]]
    print_table(["model", "fit_s", "n_iter", "converged", *kinds], rows, out=out)
    if not exact:
        return None
    from reference import labelrank as ref_labelrank

    from .labelrank import PreferenceGraphs

    Xs, Ys = X[:30, :5], Y[:30]
    small = {"alpha": 0.5, "tol": 1e-10}
    t0 = time.perf_counter()
    m = LabelRankBoost(**small).fit(Xs, Ys)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    sol = ref_labelrank.solve(Xs, PreferenceGraphs.from_indicator(Ys), "domination", small["alpha"])
    t_ref = time.perf_counter() - t0
    print(f"\nlabelrank: gap to the exact cvxpy optimum; {Xs.shape[0]} points, {Xs.shape[1]} features, "
          f"{Ys.shape[1]} labels; params {small}", file=out)
    return print_gap("labelrank", m.objective_, t_fast, f"n_iter={m.n_iter_}", sol, t_ref, out)


def demo_mlr(out=None, n_splits=10, exact=True):
    """MLR on scikit-learn's bundled copy of UCI Wine: kNN test error of the learned metric against the
    Euclidean one over random 80/20 splits, then the gap to the exact SDP (every ranking enumerated) on a tiny
    sub-problem."""
    from sklearn.datasets import load_wine
    from sklearn.neighbors import KNeighborsClassifier

    from .mlr import MLR

    out = out or sys.stdout
    X, y = load_wine(return_X_y=True)
    losses = ("auc", "map", "mrr")
    errors = {name: [] for name in ("euclidean", *losses)}
    fits = {loss: [] for loss in losses}
    for seed in range(n_splits):
        test = np.random.default_rng(seed).permutation(len(y))[: len(y) // 5]
        train = np.setdiff1d(np.arange(len(y)), test)
        mean, std = X[train].mean(axis=0), X[train].std(axis=0)
        Xtr, Xte = (X[train] - mean) / std, (X[test] - mean) / std
        knn = lambda A, B: 1.0 - KNeighborsClassifier(3).fit(A, y[train]).score(B, y[test])
        errors["euclidean"].append(knn(Xtr, Xte))
        for loss in losses:
            t0 = time.perf_counter()
            m = MLR(loss=loss, C=1.0).fit(Xtr, y[train])
            fits[loss].append((time.perf_counter() - t0, m))
            errors[loss].append(knn(m.transform(Xtr), m.transform(Xte)))
    print(f"\nmlr: metric learning to rank on scikit-learn's bundled UCI Wine ({len(y)} points, {X.shape[1]} "
          f"features, 3 classes; each point is a query, its class-mates are relevant); z-scored, {n_splits} random "
          f"80/20 splits, 3-NN test error", file=out)
    rows = [["euclidean", "-", "-", "-", X.shape[1], f"{100 * np.mean(errors['euclidean']):.2f}%"]]
    for loss in losses:
        rows.append([f"mlr-{loss} (C=1)", np.mean([t for t, _ in fits[loss]]),
                     f"{np.mean([m.n_batches_ for _, m in fits[loss]]):.1f}", all(m.converged_ for _, m in fits[loss]),
                     f"{np.mean([m.components_.shape[0] for _, m in fits[loss]]):.1f}",
                     f"{100 * np.mean(errors[loss]):.2f}%"])
    print_table(["model", "mean_fit_s", "mean_batches", "converged", "mean_rank", "knn3_test_error"], rows,
                out=out)
    if not exact:
        return None
    from reference import mlr as ref_mlr

    Xs = Xtr[np.r_[np.flatnonzero(y[train] == 0)[:4], np.flatnonzero(y[train] == 1)[:4]]][:, :3]
    ys = np.repeat([0, 1], 4)
    params = {"loss": "auc", "C": 10.0, "tol": 1e-5}
    t0 = time.perf_counter()
    m = MLR(**params).fit(Xs, ys)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    sol = ref_mlr.solve(Xs, ys, loss="auc", C=10.0)
    t_ref = time.perf_counter() - t0
    print(f"\nmlr: gap to the exact SDP (every ranking of every query enumerated); {Xs.shape[0]} points, "
          f"{Xs.shape[1]} features; params {params}", file=out)
    return print_gap("mlr", m.objective_, t_fast, f"batches={m.n_batches_}", sol, t_ref, out,
                     note=f" (MLR stops at a certified gap of C * tol = {params['C'] * params['tol']:g})")


def fit_params(args, spec):
    """The hyper-parameters of a fit: ``--param`` pairs (names checked against what the model file can hold),
    ``-v`` and ``--threads`` (as n_jobs where the solver has it; every fit runs inside the same thread limit
    anyway)."""
    accepted = accepted_params(spec)
    params = parse_params(args.param)
    check_param_names(spec, params, accepted)
    params["verbose"] = args.verbose
    if args.threads is not None and "n_jobs" in accepted:
        params.setdefault("n_jobs", args.threads)
    if params.get("early_stopping_rounds") is not None and not args.valid:
        raise ValueError("-p early_stopping_rounds needs a validation set: add --valid FILE (early stopping scores "
                         "it after every step)")
    return params


def takes_valid(spec):
    """Whether a family scores a validation set during its fit (its solve or fit has ``eval_set``)."""
    import inspect

    fit = spec.solve_function if spec.solve else spec.estimator_class.fit
    return "eval_set" in inspect.signature(fit).parameters


def report_fit(name, result, elapsed):
    print(f"{name}: fit in {elapsed:.3f} s, n_iter={result.n_iter}, objective={result.objective:.10g}, "
          f"{result.optimality_name}={result.optimality:.3g}, converged={result.converged}")
    if result.message:
        print(f"{name}: warning: {result.message}", file=sys.stderr)


def load_weights_of(path, n_rows, data):
    """The weights of weight file ``path`` for the ``n_rows`` rows of the data file ``data``."""
    from .io import load_weights

    return load_weights(path, n_rows, data=f"the data file {data}")


def load_train_weights(args, n_rows):
    """The ``--weights`` file's weights for the ``n_rows`` rows of the training file: the keyword arguments of the
    fit, ``{"sample_weight": w}``, or ``{}`` without the option."""
    return {"sample_weight": load_weights_of(args.weights, n_rows, args.train)} if args.weights else {}


def load_valid(args, X):
    if not args.valid:
        return None
    return load_data(args.valid, n_features=X.shape[1], what=f"the training file {args.train}")


def fit_functional(spec, args, params):
    """A fit through the functional layer (no scikit-learn import); the model file is written from the result."""
    from .io import ModelRecord, load_svmlight, load_svmlight_multilabel, save_model

    solve = spec.solve_function
    if spec.data == "classes":  # label idx:val lines: one class label per point (a qid column is refused)
        X, y, qid = load_svmlight(args.train)
        check_feature_count(X, args.train, args.max_features)
        if qid.size and np.any(qid != qid[0]):
            raise ValueError(f"{args.train}: {spec.name} takes class labels (label idx:val lines), not queries")
        from ._memory import check_memory

        check_memory(8 * X.shape[0] * X.shape[1], f"the dense copy of {args.train} ({X.shape[0]} x {X.shape[1]})",
                     "MLR learns a dense d x d metric: reduce the features first (e.g. PCA)")
        X = X.toarray()  # MLR's metric is dense: d x d
        weights = load_train_weights(args, X.shape[0])
        t0 = time.perf_counter()
        result = solve(X, y, **weights, **params)
    elif spec.data == "multilabel":  # l1,l2,... idx:val lines: the label sets of LIBSVM's multilabel data
        X, Y = load_svmlight_multilabel(args.train)
        check_feature_count(X, args.train, args.max_features)
        weights = load_train_weights(args, X.shape[0])
        t0 = time.perf_counter()
        result = solve(X, Y, **weights, **params)
    else:
        X, y, qid = load_data(args.train, max_features=args.max_features)
        valid = load_valid(args, X)
        extra = {} if valid is None else {"eval_set": valid}
        extra.update(load_train_weights(args, X.shape[0]))
        t0 = time.perf_counter()
        result = solve(X, y, qid, **extra, **params)
    report_fit(spec.name, result, time.perf_counter() - t0)
    if args.output:
        save_model(ModelRecord(spec.class_name, params, result.fitted_attributes()), args.output)
        print(f"model written to {args.output}")
    return 0


def cmd_fit(args):
    from ._threads import all_threads

    args.threads = check_threads(args.threads)
    if args.max_features is not None and args.max_features < 1:
        raise ValueError(f"--max-features must be a number of features >= 1, got {args.max_features}")
    spec = _registry.get(args.solver)
    params = fit_params(args, spec)
    if args.valid and not takes_valid(spec):
        users = ", ".join(n for n, s in _registry.SOLVERS.items() if s.data == "ranking" and takes_valid(s))
        raise ValueError(f"--valid: {spec.name} does not use a validation set (its fit stops on its own optimality "
                         f"test); --valid is for the solvers with early stopping: {users}")
    if not args.output:
        print(f"cyrank fit: warning: no -o/--output given, so the trained {spec.name} model will not be saved "
              "(add -o MODEL.npz to keep it)", file=sys.stderr)
    with all_threads(args.threads):
        if spec.solve:
            return fit_functional(spec, args, params)
        from .io import save_model  # an estimator without a functional layer (LambdaMART: LightGBM's trees)

        X, y, qid = load_data(args.train, max_features=args.max_features)
        valid = load_valid(args, X)
        extra = {} if valid is None else {"eval_set": valid}
        extra.update(load_train_weights(args, X.shape[0]))
        est = spec.make(**params)
        t0 = time.perf_counter()
        est.fit(X, y, qid=qid, **extra)
        elapsed = time.perf_counter() - t0
        print(f"{spec.name}: fit in {elapsed:.3f} s, n_iter={est.n_iter_}, "
              f"converged={getattr(est, 'converged_', 'n/a')}")
        if args.output:
            save_model(est, args.output)
            print(f"model written to {args.output}")
    return 0


def model_scores(model_path, data_path, doc_ids=False):
    """Scores of a saved model on a data file (read with the model's feature count), with the file's y and qid (and
    its document ids with ``doc_ids``)."""
    from .io import load_model

    est = load_model(model_path)
    if type(est).__name__ == "LabelRankBoost":  # label scores (n x n_labels) on a multilabel file
        from .io import load_svmlight_multilabel

        if doc_ids:
            raise ValueError(f"{model_path} holds a label-ranking model (LabelRankBoost), which scores labels, not "
                             "documents: a TREC run cannot hold its scores")
        X, Y = load_svmlight_multilabel(data_path, n_features=est.n_features_in_, n_labels=est.n_labels_)
        return est.predict(X), Y, None
    if not callable(getattr(est, "predict", None)):
        raise ValueError(f"{model_path} holds a model of class {type(est).__name__}, which gives no ranking scores (MLR "
                         "learns a metric: use its transform in Python); predict and eval need a ranker such as "
                         "DominationRank or RankSVM")
    X, y, qid, *ids = load_data(data_path, n_features=getattr(est, "n_features_in_", None),
                                what=f"the model {model_path}", doc_ids=doc_ids)
    return (est.predict(X), y, qid, *ids)


def write_trec_run(args):
    """``predict --format trec``: the scores as a TREC run, documents named by DATA's ``#docid = X`` comments, queries
    by its qid, ranks in trec_eval's order (:func:`cyrank.io.write_run`)."""
    import io

    from .io import run_from_scores, write_run

    try:
        scores, _, qid, doc_ids = model_scores(args.model, args.data, doc_ids=True)
    except ValueError as exc:
        if "no '#docid = ...' comment" not in str(exc):
            raise
        raise ValueError(f"--format trec names each document by its '#docid = X' comment: {exc}. Without document "
                         "ids, write scores (the default --format scores)") from None
    run = run_from_scores(qid, doc_ids, scores)
    if args.output:
        write_run(args.output, run, tag=args.tag)
        return 0
    buffer = io.BytesIO()
    write_run(buffer, run, tag=args.tag)
    sys.stdout.write(buffer.getvalue().decode("utf-8"))
    return 0


def cmd_predict(args):
    if args.format == "trec":
        args.tag = "cyrank" if args.tag is None else args.tag
        if not args.tag or any(c.isspace() for c in args.tag):
            raise ValueError(f"--tag must be a name without whitespace (the run's last column), got {args.tag!r}")
        return write_trec_run(args)
    if args.tag is not None:
        raise ValueError("--tag names a TREC run: it goes with --format trec")
    scores, _, _ = model_scores(args.model, args.data)
    if args.output:
        from .io import atomic_write

        atomic_write(args.output, lambda fh: np.savetxt(fh, scores, fmt="%.17g"))
    else:
        np.savetxt(sys.stdout, scores, fmt="%.17g")
    return 0


def eval_inputs(args):
    """What ``cyrank eval`` evaluates, checked: ``("trec", (qrels, run))`` for --run/--qrels, ``("arrays", (y, scores,
    qid))`` for DATA with --model/--scores, ``("labels", (Y, label scores))`` for a label-ranking model."""
    if args.run or args.qrels:
        if not (args.run and args.qrels):
            raise ValueError("--run and --qrels go together: a TREC run and the qrels that judge it")
        if args.data or args.model or args.scores:
            raise ValueError("give either --run RUN --qrels QRELS, or DATA with --model or --scores, not both")
        from .io import read_qrels, read_run

        return "trec", (read_qrels(args.qrels), read_run(args.run))
    if args.data is None:
        raise ValueError("give DATA with --model or --scores, or a TREC run and its qrels (--run RUN --qrels QRELS)")
    if (args.model is None) == (args.scores is None):
        raise ValueError("give exactly one of --model and --scores")
    if args.model:
        scores, y, qid = model_scores(args.model, args.data)
        if scores.ndim == 2:
            return "labels", (y, scores)
        return "arrays", (y, scores, qid)
    _, y, qid = load_data(args.data)
    return "arrays", (y, read_scores(args.scores, args.data, y.shape[0]), qid)


def print_label_ranking_errors(Y, scores):
    """A label-ranking model's errors on preference graphs (cyrank eval DATA --model LABELRANK_MODEL)."""
    from .metrics import label_ranking_error

    rows = [[f"{d} error", label_ranking_error(Y, scores, d)]
            for d in ("zero_one", "disagreement", "domination", "dominated")]
    print_table(["metric", "value"], rows)
    print("\nrules: errors of the label scores on the preference graphs of each point's label set (relevant "
          "labels above the others), mean over points; tied scores count as errors (ties='pessimistic')")


def metric_rules(specs, convention, kind):
    """The rules lines of ``cyrank eval``: the convention and where it came from, then each metric's rules."""
    from .metrics import describe_metric

    lines = []
    if convention is not None:
        origin = ("the default for --run/--qrels; --convention changes it"
                  if kind == "trec" and convention == "trec_eval" else "--convention")
        lines.append(f"convention: {convention} ({origin})")
    options = {} if convention is None else {"convention": convention}
    return lines + [describe_metric(spec, **options) for spec in specs]


def json_value(v):
    return None if v != v else v  # NaN (a query left out) is null


def cmd_eval(args):
    specs = args.metric or list(DEFAULT_METRICS)
    for spec in specs:  # a misspelt metric is reported before any work
        metric_function(spec)
    convention = args.convention
    kind, data = eval_inputs(args)
    if kind == "labels":
        if args.per_query or args.format != "table" or convention:
            raise ValueError("-q, --format json and --convention are for rankers; a label-ranking model gives its "
                             "errors on preference graphs")
        print_label_ranking_errors(*data)
        return 0
    if convention is None and kind == "trec":
        convention = "trec_eval"
    convention = None if convention == "none" else convention
    rules = metric_rules(specs, convention, kind)
    if args.format == "table" and not args.per_query:
        options = {} if convention is None else {"convention": convention}
        values = [[label, float(f(*data, **options))] for label, f in map(metric_function, specs)]
        print_table(["metric", "value"], values)
        print("\nrules (mean over queries):")
        for line in rules:
            print(f"  {line}")
        return 0
    results = evaluate_per_query(data, specs, convention)
    if args.format == "json":
        import json

        out = {label: {"all": json_value(mean), "per_query": {q: json_value(v) for q, v in per_query.items()},
                       "rules": rule}
               for (label, (mean, per_query)), rule in zip(results.items(), rules[-len(specs):])}
        print(json.dumps(out, indent=1))
        return 0
    for label, (_, per_query) in results.items():  # trec_eval -q: measure, query, value; then "all"
        for q, v in per_query.items():
            if v == v:
                print(f"{label:<22}\t{q}\t{v:.4f}")
    for label, (mean, _) in results.items():
        print(f"{label:<22}\tall\t{mean:.4f}")
    for line in rules:
        print(f"# {line}")
    return 0


def cmd_verify(args):
    spec = _registry.get(args.solver)
    if not spec.reference:
        supported = ", ".join(n for n, s in _registry.SOLVERS.items() if s.reference)
        why = {"mlr": "cyrank demo --solvers mlr compares MLR with the exact SDP on Wine",
               "labelrank": "cyrank demo --solvers labelrank compares LabelRankBoost with the exact cvxpy optimum"}
        raise ValueError(f"verify does not support {spec.name}: it checks {supported} (the solvers whose objective "
                         "it can hand to cvxpy from a ranking file); "
                         + why.get(spec.name, f"{spec.name}'s objective is not convex, so it has no exact optimum"))
    if args.weights and not args.data:
        raise ValueError("--weights needs a DATA file: the weight file has one weight per row of it")
    if args.data:
        X, y, qid = load_data(args.data)
        X = X.toarray() if hasattr(X, "toarray") and X.shape[0] * X.shape[1] <= 10**6 else X
    else:
        n, d, nq = args.generate
        if min(n, d, nq) < 1:
            raise ValueError(f"--generate N D QUERIES must be positive integers, got {n} {d} {nq}")
        rng = np.random.default_rng(args.seed)
        X = rng.normal(size=(n, d))
        qid = rng.integers(0, nq, size=n)
        y = np.clip(np.rint(X @ rng.normal(size=d) + rng.normal(size=n)), 0, 3)
    params = {**spec.small_params, **parse_params(args.param)}
    accepted = sorted(spec.estimator_class().get_params())
    check_param_names(spec, params, accepted)
    params["verbose"] = args.verbose
    weights = load_weights_of(args.weights, X.shape[0], args.data) if args.weights else None
    gap = verify_solver(spec, X, y, qid, params, sample_weight=weights)
    return 0 if gap <= args.max_gap else 1


def build_parser():
    solvers = ", ".join(_registry.SOLVERS)
    rankers, others = demo_names()
    verify_solvers = ", ".join(name for name, spec in _registry.SOLVERS.items() if spec.reference)
    valid_solvers = ", ".join(name for name, spec in _registry.SOLVERS.items() if name in ("lambdarank", "lambdamart"))
    p = argparse.ArgumentParser(prog="cyrank", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"cyrank {__version__}")
    p.add_argument("--debug", action="store_true", help="show the Python traceback of an error (default: one line)")
    sub = p.add_subparsers(dest="command", required=True)

    def add(name, func, help_, verbose=None):
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.set_defaults(func=func, verbose=0)
        if verbose:
            sp.add_argument("-v", "--verbose", action="count", default=0, help=verbose)
        return sp

    d = add("demo", cmd_demo, "train every solver (LambdaMART when LightGBM is installed) on small real data; print "
            "test metrics, fit times and the gap to the exact cvxpy optimum", verbose="the solvers' progress lines")
    d.add_argument("--solvers", help=f"comma-separated subset of: {', '.join([*rankers, *others])}")

    f = add("fit", cmd_fit, "train a solver on an SVMlight/LETOR file",
            verbose="the solver's progress lines (per iteration, or per round for lambdamart)")
    f.add_argument("solver", help=solvers)
    f.add_argument("train", help="training file (label qid:N idx:val ...; labelrank: l1,l2,... idx:val ...; mlr: "
                   "class idx:val ...)")
    f.add_argument("-o", "--output", help="model file to write (.npz, loaded without pickle); without it the "
                   "model is not saved")
    f.add_argument("-p", "--param", action="append", metavar="NAME=VALUE",
                   help="hyper-parameter of the solver's estimator (repeatable); a wrong name lists the valid ones "
                   "(an estimator taking **kwargs, such as lambdamart with LightGBM's parameters, checks names itself)")
    f.add_argument("-t", "--threads", type=int, help="threads of every kernel and of BLAS (default: OMP_NUM_THREADS, "
                   "else every core; -1: every core)")
    f.add_argument("--valid", metavar="FILE", help=f"validation file scored after every step, for early stopping "
                   f"with -p early_stopping_rounds=N ({valid_solvers} only)")
    f.add_argument("--weights", metavar="FILE", help="sample weights: one number >= 0 per line, line k for row k of "
                   "TRAIN (LightGBM's .weight files). Ranking families: the pair (i, j), y_i > y_j, counts with the "
                   "weight of row i; labelrank: instances; mlr: queries")
    f.add_argument("--max-features", type=int, metavar="N", help=f"most features the training file may imply "
                   f"(default: max({MAX_FEATURES_FLOOR}, {FEATURES_PER_VALUE} x its stored values))")

    pr = add("predict", cmd_predict, "score an SVMlight/LETOR file with a saved model")
    pr.add_argument("model")
    pr.add_argument("data")
    pr.add_argument("-o", "--output", help="score file, one score per line, replaced only once complete "
                    "(default: stdout)")
    pr.add_argument("--format", choices=("scores", "trec"), default="scores", help="scores: one per line, in "
                    "DATA's order (default); trec: a TREC run 'qid Q0 docid rank score tag', documents named by "
                    "DATA's '#docid = X' comments (a file without them is refused), ranks in trec_eval's order")
    pr.add_argument("--tag", help="the run's name, its last column (--format trec; default: cyrank)")

    e = add("eval", cmd_eval, "ranking metrics of a model or of a score file on labelled data, and the gain, tie "
            "and empty-query rules they used")
    e.add_argument("data", nargs="?", help="labelled LETOR/SVMlight file (with --model or --scores)")
    e.add_argument("--model")
    e.add_argument("--scores", help="text file with one score per row of DATA")
    e.add_argument("--run", help="a TREC run file (qid Q0 docid rank score tag), evaluated against --qrels")
    e.add_argument("--qrels", help="a TREC qrels file (qid iter docid rel) judging --run")
    e.add_argument("-m", "--metric", action="append", help="ndcg@k, err@k, map, mrr, p@k, auc, pairacc, meanndcg "
                   f"(repeatable; default: {', '.join(DEFAULT_METRICS)})")
    e.add_argument("--convention", choices=CONVENTIONS, help="the gain, tie and empty-query rules of a published "
                   "evaluator (cyrank.metrics' presets); default: trec_eval with --run/--qrels, none (cyrank's "
                   "rules) with DATA")
    e.add_argument("-q", "--per-query", action="store_true", help="one line per metric and query as trec_eval -q "
                   "prints them (metric, query, value, tab-separated), then the 'all' lines and the rules as '#' "
                   "lines")
    e.add_argument("--format", choices=("table", "json"), default="table", help="json: {metric: {\"all\": mean, "
                   "\"per_query\": {query: value}, \"rules\": text}} (a query left out of the mean is null)")

    v = add("verify", cmd_verify, "compare a solver's final objective with the exact cvxpy optimum",
            verbose="the solver's progress lines")
    v.add_argument("solver", help=verify_solvers)
    v.add_argument("data", nargs="?", help="small SVMlight/LETOR file (default: a generated problem)")
    v.add_argument("--generate", nargs=3, type=int, default=(40, 5, 4), metavar=("N", "D", "QUERIES"))
    v.add_argument("--seed", type=int, default=0)
    v.add_argument("-p", "--param", action="append", metavar="NAME=VALUE")
    v.add_argument("--max-gap", type=float, default=1e-6, help="exit status 1 above this relative gap")
    v.add_argument("--weights", metavar="FILE", help="sample weights of DATA's rows, one per line (as fit's "
                   "--weights): both solvers minimise the weighted objective")
    return p


def _show_warning(command):
    def show(message, category, filename, lineno, file=None, line=None):
        print(f"cyrank {command}: warning: {message}", file=sys.stderr if file is None else file)
    return show


def main(argv=None):
    import warnings

    args = build_parser().parse_args(argv)
    if args.debug:
        return args.func(args)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning(args.command)  # one line per warning, no source line
        try:
            return args.func(args)
        except BrokenPipeError:  # the reader of stdout stopped (cyrank eval -q ... | head): quiet, as other tools
            import os

            try:  # Python's flush at exit would fail again on the closed pipe
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            except (OSError, ValueError):
                pass
            return 141
        except (ValueError, TypeError, OSError, OverflowError, RuntimeError) as exc:
            print(f"cyrank {args.command}: error: {exc}", file=sys.stderr)
            return 2
        except MemoryError as exc:
            print(f"cyrank {args.command}: error: out of memory ({exc or 'allocation failed'}); use a smaller problem "
                  "or a machine with more memory", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"cyrank {args.command}: interrupted", file=sys.stderr)
            return 130
        except Exception as exc:  # noqa: BLE001  (a library error without a checked message, e.g. LightGBM's)
            print(f"cyrank {args.command}: error: {type(exc).__name__}: {exc} (unexpected; cyrank --debug "
                  f"{args.command} ... shows the traceback)", file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
