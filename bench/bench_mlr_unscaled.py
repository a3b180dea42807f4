"""MLR with the Frobenius regulariser on unscaled columns: convergence and time of the cutting plane.

Small two-class problems (4-8 points, 1-5 columns of standard deviation 10^1.5 .. 10^2.2, the count-like columns
on which the restricted problem's dual Newton method stalled), AUC loss, C in {0.1, 10, 1000}, tol 0.01, and the
two UCI sets of scikit-learn (WDBC, wine) raw and standardised. Prints per fit: converged_, gap / C,
n_separations_, seconds; and the count of fits that did not converge.

    OMP_NUM_THREADS=1 .venv/bin/python bench/bench_mlr_unscaled.py [--seeds 12]
"""
import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_breast_cancer, load_wine

from cyrank import MLR


def fit(X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        model = MLR(regularizer="frobenius", **params).fit(X, y)
    return model, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=12)
    args = parser.parse_args()
    failed, times = 0, []
    print("seed  C  n  d  converged  gap/C  separations  seconds")
    for seed in range(args.seeds):
        rng = np.random.default_rng(seed)
        n, d = rng.integers(4, 9), rng.integers(1, 6)
        y = np.r_[0, 0, 1, 1, rng.integers(0, 2, n - 4)]
        X = rng.normal(size=(n, d)) * 10 ** rng.uniform(1.5, 2.2, d)
        for C in (0.1, 10.0, 1e3):
            model, seconds = fit(X, y, loss="auc", C=C)
            failed += not model.converged_
            times.append(seconds)
            print(f"{seed} {C:g} {n} {d} {model.converged_} {model.gap_ / C:.2e} {model.n_separations_} {seconds:.2f}")
    print(f"small problems: {failed} of {len(times)} not converged; total {sum(times):.1f} s, "
          f"slowest {max(times):.2f} s")
    for name, (X, y) in (("wdbc", load_breast_cancer(return_X_y=True)), ("wine", load_wine(return_X_y=True))):
        for scaled in (False, True):
            Xs = (X - X.mean(0)) / X.std(0) if scaled else X
            for loss in ("auc", "ndcg"):
                model, seconds = fit(Xs, y, loss=loss, C=10.0, max_iter=300)
                print(f"{name} {'standardised' if scaled else 'raw'} {loss}: converged {model.converged_}, gap / C "
                      f"{model.gap_ / 10:.2e}, {model.n_separations_} separations, {seconds:.2f} s")


if __name__ == "__main__":
    main()
