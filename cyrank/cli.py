"""Command line: ``cyrank demo | fit | predict | eval | verify``.

    cyrank demo                                   every solver on the embedded real data + reference gap; MLR on
                                                  scikit-learn's bundled Wine data
    cyrank fit SOLVER TRAIN.svm -o MODEL.npz      train (``--param name=value`` sets hyper-parameters,
                                                  ``--threads N`` the threads); SOLVER labelrank reads multilabel
                                                  files (l1,l2,... idx:val ...), mlr class-label files
    cyrank predict MODEL.npz DATA.svm [-o FILE]   one score per line
    cyrank eval DATA.svm (--model M | --scores S) ranking metrics of a model or a score file
    cyrank verify SOLVER [DATA.svm]               fast solver vs the cvxpy reference, objectives side by side
"""
import argparse
import importlib.util
import sys
import time

import numpy as np

from . import _registry, __version__

DEFAULT_METRICS = ("ndcg@10", "err@10", "map", "pairacc")


# ---------------------------------------------------------------------------------------------- helpers
def parse_value(text):
    """A ``--param`` value: int, float, true/false, none, or the string itself (never evaluated)."""
    low = text.lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
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


def load_data(path, n_features=None):
    from .io import load_svmlight

    return load_svmlight(path, n_features=n_features)


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


def verify_solver(spec, X, y, qid, params, out=None):
    """Fit ``spec``'s estimator and the reference on the same problem; print both objectives; return the gap."""
    out = out or sys.stdout
    est = spec.make(**params)
    t0 = time.perf_counter()
    est.fit(X, y, qid=qid)
    t_fast = time.perf_counter() - t0
    t0 = time.perf_counter()
    sol = spec.solve_reference(est, X, y, qid)
    t_ref = time.perf_counter() - t0
    gap = abs(est.objective_ - sol.objective) / max(1.0, abs(sol.objective))
    print(f"problem: {X.shape[0]} rows, {X.shape[1]} features, {np.unique(qid).size} queries; params {params}", file=out)
    print_table(
        ["solver", "objective", "time_s", "detail"],
        [
            ["cyrank " + spec.name, f"{est.objective_:.12g}", f"{t_fast:.3g}", f"n_iter={est.n_iter_}"],
            ["reference (cvxpy)", f"{sol.objective:.12g}", f"{t_ref:.3g}", f"{sol.solver} {sol.status}"],
        ],
        out=out,
    )
    print(f"relative objective gap |f_cyrank - f_ref| / max(1, |f_ref|) = {gap:.2e}", file=out)
    return gap


# ---------------------------------------------------------------------------------------------- commands
def cmd_demo(args):
    from .datasets import load_lightgbm_rank

    demo_solvers = [name for name, spec in _registry.SOLVERS.items() if spec.demo]
    names = args.solvers.split(",") if args.solvers else [*demo_solvers, "mlr"]
    for name in names:  # MLR has its own demo (Wine); the others take the ranking data
        if name not in (*demo_solvers, "mlr"):
            raise ValueError(f"--solvers: {name!r} is not in the demo; choose from {', '.join(demo_solvers)}, mlr")

    Xtr, ytr, qtr = load_lightgbm_rank("train")
    Xte, yte, qte = load_lightgbm_rank("test")
    print(f"cyrank {__version__} demo: embedded LightGBM lambdarank example data (MIT, Microsoft)")
    print(f"train {Xtr.shape[0]} docs / {np.unique(qtr).size} queries, test {Xte.shape[0]} docs / "
          f"{np.unique(qte).size} queries, {Xtr.shape[1]} features")
    print("metrics on the test set, mean over queries; queries without a relevant document are dropped "
          "(empty='drop'), score ties broken pessimistically\n")
    specs = [_registry.get(name) for name in names if name != "mlr"]
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
    print_table(header, rows)
    exact = importlib.util.find_spec("cvxpy") is not None
    for spec in specs:
        if not (spec.reference and exact):
            continue
        print(f"\n{spec.name}: gap to the exact cvxpy optimum on a small sub-problem of the training data")
        verify_solver(spec, *small_problem(Xtr, ytr, qtr), spec.small_params)
    if "mlr" in names:
        demo_mlr(exact=exact)
    if not exact:
        print("\n(cvxpy is not installed: the gaps to the exact optimum are skipped; pip install 'cyrank[reference]')")
    return 0


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
    print_table(["solver", "objective", "time_s", "detail"],
                [["cyrank mlr", f"{m.objective_:.12g}", f"{t_fast:.3g}", f"batches={m.n_batches_}"],
                 ["reference (cvxpy)", f"{sol.objective:.12g}", f"{t_ref:.3g}", f"{sol.solver} {sol.status}"]],
                out=out)
    gap = abs(m.objective_ - sol.objective) / max(1.0, abs(sol.objective))
    print(f"relative objective gap |f_cyrank - f_ref| / max(1, |f_ref|) = {gap:.2e} "
          f"(MLR stops at a certified gap of C * tol = {params['C'] * params['tol']:g})", file=out)
    return gap


def fit_params(args, accepts):
    """The hyper-parameters of a fit: ``--param`` pairs, ``-v`` and ``--threads`` (as n_jobs where the solver has
    it; every fit runs inside the same thread limit anyway)."""
    params = {**parse_params(args.param), "verbose": args.verbose}
    if args.threads is not None and "n_jobs" in accepts:
        params.setdefault("n_jobs", args.threads)
    return params


def report_fit(name, result, elapsed):
    print(f"{name}: fit in {elapsed:.3f} s, n_iter={result.n_iter}, objective={result.objective:.10g}, "
          f"{result.optimality_name}={result.optimality:.3g}, converged={result.converged}")
    if result.message:
        print(f"{name}: warning: {result.message}", file=sys.stderr)


def fit_functional(spec, args):
    """A fit through the functional layer (no scikit-learn import); the model file is written from the result."""
    import inspect

    from .io import load_svmlight, load_svmlight_multilabel, save_fitted

    solve = spec.solve_function
    params = fit_params(args, inspect.signature(solve).parameters)
    if spec.data == "classes":  # label idx:val lines: one class label per point (a qid column is refused)
        X, y, qid = load_svmlight(args.train)
        if qid.size and np.any(qid != qid[0]):
            raise ValueError(f"{args.train}: {spec.name} takes class labels (label idx:val lines), not queries")
        X = X.toarray()  # MLR's metric is dense: d x d
        t0 = time.perf_counter()
        result = solve(X, y, **params)
    elif spec.data == "multilabel":  # l1,l2,... idx:val lines: the label sets of LIBSVM's multilabel data
        X, Y = load_svmlight_multilabel(args.train)
        t0 = time.perf_counter()
        result = solve(X, Y, **params)
    else:
        X, y, qid = load_data(args.train)
        t0 = time.perf_counter()
        result = solve(X, y, qid, **params)
    report_fit(spec.name, result, time.perf_counter() - t0)
    if args.output:
        save_fitted(spec.class_name, params, result.fitted_attributes(), args.output)
        print(f"model written to {args.output}")
    return 0


def cmd_fit(args):
    from ._threads import all_threads
    from ._validation import check_n_jobs

    args.threads = check_n_jobs(args.threads)
    with all_threads(args.threads):
        spec = _registry.get(args.solver)
        if spec.solve:
            return fit_functional(spec, args)
        from .io import save_model  # an estimator without a functional layer (LambdaMART: LightGBM's trees)

        params = fit_params(args, spec.estimator_class().get_params())
        X, y, qid = load_data(args.train)
        est = spec.make(**params)
        t0 = time.perf_counter()
        est.fit(X, y, qid=qid)
        elapsed = time.perf_counter() - t0
        print(f"{spec.name}: fit in {elapsed:.3f} s, n_iter={est.n_iter_}, "
              f"converged={getattr(est, 'converged_', 'n/a')}")
        if args.output:
            save_model(est, args.output)
            print(f"model written to {args.output}")
    return 0


def model_scores(model_path, data_path):
    """Scores of a saved model on a data file (read with the model's feature count), with the file's y and qid."""
    from .io import load_model

    est = load_model(model_path)
    if type(est).__name__ == "LabelRankBoost":  # label scores (n x n_labels) on a multilabel file
        from .io import load_svmlight_multilabel

        X, Y = load_svmlight_multilabel(data_path, n_features=est.n_features_in_, n_labels=est.n_labels_)
        return est.predict(X), Y, None
    if not callable(getattr(est, "predict", None)):
        raise ValueError(f"{model_path} holds a model of class {type(est).__name__}, which gives no ranking scores (MLR "
                         "learns a metric: use its transform in Python); predict and eval need a ranker such as "
                         "DominationRank or RankSVM")
    X, y, qid = load_data(data_path, n_features=getattr(est, "n_features_in_", None))
    return est.predict(X), y, qid


def cmd_predict(args):
    scores, _, _ = model_scores(args.model, args.data)
    out = open(args.output, "w") if args.output else sys.stdout
    try:
        np.savetxt(out, scores, fmt="%.17g")
    finally:
        if args.output:
            out.close()
    return 0


def cmd_eval(args):
    if (args.model is None) == (args.scores is None):
        raise ValueError("give exactly one of --model and --scores")
    specs = args.metric or list(DEFAULT_METRICS)
    for spec in specs:  # a misspelt metric is reported before any work
        metric_function(spec)
    if args.model:
        scores, y, qid = model_scores(args.model, args.data)
        if scores.ndim == 2:  # a label-ranking model: its errors on preference graphs
            from .metrics import label_ranking_error

            rows = [[f"{d} error", label_ranking_error(y, scores, d)]
                    for d in ("zero_one", "disagreement", "domination", "dominated")]
            print_table(["metric", "value"], rows)
            return 0
    else:
        _, y, qid = load_data(args.data)
        scores = np.loadtxt(args.scores, dtype=np.float64, ndmin=1)
        if scores.shape[0] != y.shape[0]:
            raise ValueError(f"{args.scores} has {scores.shape[0]} scores but {args.data} has {y.shape[0]} rows")
    print_table(["metric", "value"], [[k, v] for k, v in evaluate(y, scores, qid, specs).items()])
    return 0


def cmd_verify(args):
    spec = _registry.get(args.solver)
    if args.data:
        X, y, qid = load_data(args.data)
        X = X.toarray() if hasattr(X, "toarray") and X.shape[0] * X.shape[1] <= 10**6 else X
    else:
        n, d, nq = args.generate
        rng = np.random.default_rng(args.seed)
        X = rng.normal(size=(n, d))
        qid = rng.integers(0, nq, size=n)
        y = np.clip(np.rint(X @ rng.normal(size=d) + rng.normal(size=n)), 0, 3)
    params = {**spec.small_params, **parse_params(args.param), "verbose": args.verbose}
    gap = verify_solver(spec, X, y, qid, params)
    return 0 if gap <= args.max_gap else 1


def build_parser():
    solvers = ", ".join(_registry.SOLVERS)
    demo_solvers = ", ".join(name for name, spec in _registry.SOLVERS.items() if spec.demo and name != "mlr")
    verify_solvers = ", ".join(name for name, spec in _registry.SOLVERS.items() if spec.reference)
    p = argparse.ArgumentParser(prog="cyrank", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"cyrank {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def add(name, func, help_):
        sp = sub.add_parser(name, help=help_, description=help_)
        sp.set_defaults(func=func)
        sp.add_argument("-v", "--verbose", action="count", default=0, help="per-iteration progress lines")
        return sp

    d = add("demo", cmd_demo, "train every solver on the embedded real data; print test metrics, times, reference gap")
    d.add_argument("--solvers", help=f"comma-separated subset of: {demo_solvers}, mlr")

    f = add("fit", cmd_fit, "train a solver on an SVMlight/LETOR file")
    f.add_argument("solver", help=solvers)
    f.add_argument("train", help="training file (label qid:N idx:val ...; labelrank: l1,l2,... idx:val ...; mlr: "
                   "class idx:val ...)")
    f.add_argument("-o", "--output", help="model file to write (.npz, loaded without pickle)")
    f.add_argument("-p", "--param", action="append", metavar="NAME=VALUE", help="hyper-parameter (repeatable)")
    f.add_argument("-t", "--threads", type=int, help="threads of every kernel and of BLAS (default: OMP_NUM_THREADS, "
                   "else every core; -1: every core)")

    pr = add("predict", cmd_predict, "score an SVMlight/LETOR file with a saved model")
    pr.add_argument("model")
    pr.add_argument("data")
    pr.add_argument("-o", "--output", help="score file (default: stdout)")

    e = add("eval", cmd_eval, "ranking metrics of a model or of a score file on labelled data")
    e.add_argument("data")
    e.add_argument("--model")
    e.add_argument("--scores", help="text file with one score per row of DATA")
    e.add_argument("-m", "--metric", action="append", help="ndcg@k, err@k, map, mrr, p@k, auc, pairacc, meanndcg")

    v = add("verify", cmd_verify, "compare a solver's final objective with the exact cvxpy optimum")
    v.add_argument("solver", help=verify_solvers)
    v.add_argument("data", nargs="?", help="small SVMlight/LETOR file (default: a generated problem)")
    v.add_argument("--generate", nargs=3, type=int, default=(40, 5, 4), metavar=("N", "D", "QUERIES"))
    v.add_argument("--seed", type=int, default=0)
    v.add_argument("-p", "--param", action="append", metavar="NAME=VALUE")
    v.add_argument("--max-gap", type=float, default=1e-6, help="exit status 1 above this relative gap")
    return p


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError, OSError) as exc:
        print(f"cyrank {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError as exc:
        print(f"cyrank {args.command}: error: out of memory ({exc or 'allocation failed'}); use a smaller problem "
              "or a machine with more memory", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"cyrank {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
