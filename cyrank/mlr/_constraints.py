"""The cutting-plane batch of MLR in factored form (McFee & Lanckriet, ICML 2010, section 3.2).

For every query q the oracle (``_oracles.oracle_block``) returns coefficients a_q (one per corpus point,
sum_i a_qi = 0) with psi(q, y*) - psi(q, y_q) = sum_i a_qi phi(q, i), phi(q, i) = -(x_q - x_i)(x_q - x_i)'.
Because sum_i a_qi = 0,

    sum_i a_qi phi(q, i) = x_q m_q' + m_q x_q' - sum_i a_qi x_i x_i',        m_q = sum_i a_qi x_i,

so with A the (queries x n) coefficient matrix, M = A X, c = A' 1 and m the number of active queries,

    Psi = (1/m) sum_q (psi(q, y*) - psi(q, y_q)) = (1/m) (X'M + M'X - X' diag(c) X).

With query weights v_q (``sample_weight``) the mean is the weighted one: (1/m) sum_q becomes
sum_q v_q (.) / sum_q v_q over the active queries, i.e. A's rows are scaled by v_q (in place, O(block x n) per
block, little next to the oracles' sorts and the scores' product) and m is sum_q v_q; unit weights give the very
same operations as no weights, hence the same bits.

The coefficient rows are produced a block of queries at a time, so memory stays O(block x n); each block costs
two large matrix products, never n outer products: the scores X_B W X', and [X_B 1]' A_B, whose first d rows give
X' M through X_B' A_B X and whose last row is the block's part of c (one product in place of A_B X and a sum of
A_B's columns: 1.7x less time on WDBC).
"""
import time

import numpy as np

from . import _oracles

# rows of A (and of the score block) per block: about 2^22 doubles (32 MB) each
_BLOCK_DOUBLES = 1 << 22


class Separation:
    """Most violated batch at W: ``sep(W) -> (Delta, Psi, H)`` with Delta = mean_q Delta_q, Psi the d x d
    batch matrix and H = mean_q max_y H_q(y) (= Delta - <W, Psi> up to rounding), over the active queries.

    ``relevance`` is ("labels", labels) or ("sets", rel_ptr, rel_idx, irr_ptr, irr_idx), all int64.
    ``W`` may be a length-d vector w, meaning diag(w). ``weight``: the queries' weights v (one per point, >= 0;
    None: the plain mean), the means then weighted means (module docstring). Times: ``t_oracle`` (Cython
    oracles), ``t_products`` (the matrix products).
    """

    def __init__(self, X, relevance, loss, k, n_threads=1, weight=None):
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        n = self.X.shape[0]
        empty = np.zeros(0, dtype=np.int64)
        if relevance[0] == "labels":
            self.mode = _oracles.MODE_LABELS
            self.labels = np.ascontiguousarray(relevance[1], dtype=np.int64)
            self.sets = (np.zeros(1, dtype=np.int64), empty, np.zeros(1, dtype=np.int64), empty)
            counts = np.bincount(self.labels)
            active = (counts[self.labels] >= 2) & (counts[self.labels] < n)
        else:
            self.mode = _oracles.MODE_SETS
            self.labels = empty
            self.sets = tuple(np.ascontiguousarray(a, dtype=np.int64) for a in relevance[1:])
            rel_ptr, _, irr_ptr, _ = self.sets
            active = (np.diff(rel_ptr) > 0) & (np.diff(irr_ptr) > 0)
        self.weight = None  # the queries' weights (0 on the inactive ones), or None
        if weight is not None:
            self.weight = np.where(active, weight, 0.0)
            if not self.weight.any():
                raise ValueError("sample_weight is 0 on every query with a relevant and an irrelevant point, so "
                                 "nothing would be fitted; give some of them a positive weight")
            active = self.weight > 0
        self.n_active = int(np.count_nonzero(active))
        # the mean's denominator: m, or the sum of the weights
        self.total = self.n_active if weight is None else float(np.sum(self.weight))
        self.loss = _oracles.LOSSES[loss]
        self.k = int(k)
        self.n_threads = int(n_threads)
        self.block = max(1, min(n, _BLOCK_DOUBLES // max(n, 1)))
        # score and coefficient blocks, allocated once: fresh arrays would be page-faulted in at every call
        self._G = np.empty((self.block, n))
        self._A = np.empty((self.block, n))
        # [X 1]' (d + 1 x n), and the block's product with A
        d = self.X.shape[1]
        self._XeT = np.ascontiguousarray(np.vstack([self.X.T, np.ones((1, n))]))
        self._Y = np.empty((d + 1, n))
        self.t_oracle = 0.0
        self.t_products = 0.0
        self.n_calls = 0

    def __call__(self, W):
        X = self.X
        n, d = X.shape
        t0 = time.perf_counter()
        XW = X * W if W.ndim == 1 else X @ W
        rsq = np.einsum("ij,ij->i", XW, X)
        T = np.zeros((d, d))
        c = np.zeros(n)
        deltas = np.zeros(n)
        values = np.zeros(n)
        t_oracle = 0.0
        for q0 in range(0, n, self.block):
            q1 = min(n, q0 + self.block)
            G = np.matmul(XW[q0:q1], X.T, out=self._G[: q1 - q0])
            A = self._A[: q1 - q0]
            t1 = time.perf_counter()
            _oracles.oracle_block(G, rsq, q0, self.mode, self.labels, *self.sets, self.loss, self.k,
                                  A, deltas[q0:q1], values[q0:q1], self.n_threads)
            t_oracle += time.perf_counter() - t1
            if self.weight is not None:
                A *= self.weight[q0:q1, None]
            Y = np.matmul(self._XeT[:, q0:q1], A, out=self._Y)      # [X_B 1]' A_B
            T += Y[:d] @ X
            c += Y[d]
        m = self.total
        Psi = (T + T.T - (X.T * c) @ X) / m
        if self.weight is not None:
            deltas *= self.weight
            values *= self.weight
        self.t_oracle += t_oracle
        self.t_products += time.perf_counter() - t0 - t_oracle
        self.n_calls += 1
        return float(np.sum(deltas) / m), Psi, float(np.sum(values) / m)
