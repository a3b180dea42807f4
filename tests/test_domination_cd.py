"""Issue 26 (second hostile audit), the DominationRank-CD cause: memory of the coordinate-descent history."""
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from cyrank import DominationRank


# ------------------------------------------------------------------------------------------- memory
def test_domination_cd_max_iter_1e11_preallocates_745_gib_of_history():
    """The CD history grows with the sweeps made: max_iter=10**11 on a tiny problem fits in a few kilobytes (it
    asked for 745 GiB up front, and max_iter did not fit the kernel's C int)."""
    import tracemalloc

    rng = np.random.RandomState(0)
    X, y, qid = rng.randn(40, 3), rng.randint(0, 3, 40).astype(np.float64), np.repeat(np.arange(4), 10)
    tracemalloc.start()
    try:
        model = DominationRank(solver="cd", max_iter=10**11).fit(X, y, qid)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert model.converged_ and peak < 16 << 20
    assert len(model.history_["objective"]) == len(model.history_["n_nonzero"]) == model.n_iter_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        long = DominationRank(solver="cd", max_iter=300, tol=1e-300).fit(X, y, qid)  # grown past 64, 128, 256
    assert long.n_iter_ == 300 and len(long.history_["objective"]) == 300
    assert np.all(np.diff(long.history_["objective"]) <= 1e-12 * abs(long.history_["objective"][0]))
    assert np.all(long.history_["n_nonzero"] == 3)
