"""Preference graphs over a label set and their decompositions (Dekel, Manning & Singer, "Log-Linear Models for
Label Ranking", NIPS 2003, sections 1-2).

A preference graph of instance i is a simple directed graph over the labels 0 .. n_labels - 1: an edge
init -> term says that init is preferred to term (should score higher). All graphs of a data set are stored flat,
CSR-like: the edges of instance i are e = edge_ptr[i] .. edge_ptr[i + 1] - 1 with labels init[e] -> term[e]
(int32), sorted by (init, term) inside each instance. Cycles are allowed (Fig. 1d); self-loops and repeated
edges are not (the paper's graphs are simple). An instance may have no edge: it then contributes nothing to the
loss and 0 to every error.

Graphs complete between label levels (from_relevance, from_indicator, from_classes, from_hierarchy: every label
preferred to every label of a lower level) are stored in the level form instead (:class:`Levels`): per instance
its labels ordered by level and the level boundaries, O(L) per instance however many edges (a bipartite graph of
10 relevant and 10 irrelevant labels has 100). The edge arrays are built from it on first request only; the
LabelRankBoost kernels use the level form directly for "domination" and "dominated" (cyrank/labelrank/_loss.pyx).

A decomposition A maps each graph G_i to s_i subgraphs G_i1 .. G_is_i (section 2, Fig. 2), stored flat as well
(:class:`Subgraphs`): "zero_one" (G_i itself), "disagreement" (one subgraph per edge), "domination" (per label
with outgoing edges: that label and the labels it dominates) and "dominated" (per label with incoming edges:
that label and the labels that dominate it); or a user callable.
"""
import numpy as np
import scipy.sparse as sp

from .._validation import check_preference_edges, check_label_matrix, check_param
from . import _graphs

DECOMPOSITIONS = ("zero_one", "disagreement", "domination", "dominated")

# Label ids index arrays of n_labels entries (scores n_instances x n_labels, coef_ of n_labels rows), stored as int32.
MAX_LABELS = 2**31 - 1
# n_labels taken from the data (the largest label id + 1, or a label matrix's columns) is refused when it exceeds
# both this floor and LABEL_SPREAD times the number of labels that occur: a stray id such as 1e9 would otherwise
# allocate gigabytes for labels that never occur.
LABEL_FLOOR, LABEL_SPREAD = 1 << 16, 1000


def check_n_labels(n_labels, n_used, what, *, inferred=True, fix=None):
    """``n_labels`` as an int in 1 .. MAX_LABELS; when it comes from the data (``inferred``), also at most
    max(LABEL_FLOOR, LABEL_SPREAD * n_used), ``n_used`` the number of distinct labels that occur. ``fix`` ends the
    message of the latter."""
    if not isinstance(n_labels, (int, np.integer)) or isinstance(n_labels, (bool, np.bool_)):
        raise TypeError(f"n_labels must be an integer, got {n_labels!r} ({type(n_labels).__name__})")
    renumber = "renumber the labels 0 .. k - 1 (e.g. numpy.unique(labels, return_inverse=True))"
    if inferred and n_labels > max(LABEL_FLOOR, LABEL_SPREAD * n_used):
        raise ValueError(f"{what}: the label ids reach {int(n_labels) - 1}, but only {n_used} distinct label(s) "
                         f"occur; n_labels = {int(n_labels)} would allocate arrays of that many labels (scores, "
                         f"coef_) for labels that never occur. {fix or 'R' + renumber[1:] + ', or pass n_labels explicitly'}")
    if n_labels > MAX_LABELS:
        raise ValueError(f"{what}: n_labels={int(n_labels)} exceeds {MAX_LABELS} (2**31 - 1), the largest label "
                         f"count (label ids are int32 indices into n_labels-sized arrays); {renumber}")
    return int(n_labels)


def _labels_in_use(R):
    """The number of columns of a label matrix (dense or sparse) with a non-zero entry, without densifying."""
    if sp.issparse(R):
        R = R.tocoo()
        return int(np.unique(R.col[R.data != 0]).size)
    R = np.asarray(R)
    return int(np.count_nonzero(np.any(R != 0, axis=0))) if R.ndim == 2 else 0


def _check_matrix_labels(R, name):
    """Refuse (before densifying a sparse one) a label matrix with absurdly many never-used columns."""
    if R is None or np.ndim(R) != 2 or np.shape(R)[1] <= LABEL_FLOOR:
        return
    if getattr(R, "dtype", np.dtype(np.float64)).kind not in "OUSVc":  # other dtypes: check_label_matrix's message
        check_n_labels(int(np.shape(R)[1]), _labels_in_use(R), f"{name} has {np.shape(R)[1]} label columns",
                       fix="Drop the columns of labels that never occur (for a multilabel file: renumber its label "
                           "ids 0 .. k - 1)")


def _describe_index(rows):
    """A short description of an index for a message: its kind, dtype and length."""
    if isinstance(rows, np.ndarray):
        return f"an array of dtype {rows.dtype} and shape {rows.shape}"
    return f"a {type(rows).__name__}"


class Levels:
    """Graphs complete between levels: instance i's labels in the order ``order[i, 0 .. L - 1]`` (every label once,
    the most preferred level first, labels ascending within a level), its level k at the positions
    ``starts[level_ptr[i] + k]`` .. (the next start or L) - 1, and an edge from every label to every label of a
    later level (Dekel, Manning & Singer, NIPS 2003, Fig. 1a-c). ``order`` int32 (n x L), ``level_ptr`` int64
    (n + 1), ``starts`` int32 (from 0 in each instance, increasing). One level: no edge."""

    def __init__(self, order, level_ptr, starts):
        self.order = np.ascontiguousarray(order, dtype=np.int32)
        self.level_ptr = np.ascontiguousarray(level_ptr, dtype=np.int64)
        self.starts = np.ascontiguousarray(starts, dtype=np.int32)

    @property
    def n_instances(self):
        return self.order.shape[0]

    @property
    def n_labels(self):
        return self.order.shape[1]

    @classmethod
    def from_grades(cls, R):
        """Levels of graded relevance R (n x L float64; larger = preferred; equal grades share a level)."""
        n, L = R.shape
        order = np.empty((n, L), dtype=np.int32)
        new = np.empty((n, L), dtype=bool)
        step = max(1, (1 << 16) // max(L, 1))  # a block of rows at a time: no n x L int64 temporaries
        for i0 in range(0, n, step):
            block = R[i0:i0 + step]
            o = np.argsort(-block, axis=1, kind="stable")
            order[i0:i0 + step] = o
            graded = np.take_along_axis(block, o, axis=1)
            new[i0:i0 + step, 0] = True
            new[i0:i0 + step, 1:] = graded[:, 1:] != graded[:, :-1]
        level_ptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.count_nonzero(new, axis=1), out=level_ptr[1:])
        return cls(order, level_ptr, np.nonzero(new)[1])

    @classmethod
    def from_classes(cls, y, n_labels):
        """Levels of class labels y: the class above every other label (ascending)."""
        others = np.arange(n_labels - 1, dtype=np.int32)
        order = np.empty((y.size, n_labels), dtype=np.int32)
        order[:, 0] = y
        order[:, 1:] = others + (others >= y[:, None])
        k = 2 if n_labels > 1 else 1
        return cls(order, np.arange(y.size + 1, dtype=np.int64) * k, np.tile(np.arange(k, dtype=np.int32), y.size))

    def _ends(self):
        """The end (one past the last position) of every level."""
        ends = np.empty(self.starts.size, dtype=np.int64)
        ends[:-1] = self.starts[1:]
        ends[self.level_ptr[1:] - 1] = self.n_labels
        return ends

    def edge_counts(self):
        """The number of edges of every instance: sum over its levels of size x labels below."""
        if self.n_instances == 0:
            return np.zeros(0, dtype=np.int64)
        ends = self._ends()
        per_level = (ends - self.starts) * (self.n_labels - ends)
        return np.add.reduceat(per_level, self.level_ptr[:-1])

    def take(self, rows):
        """The levels of the instances ``rows`` (an integer array), in that order."""
        counts = np.diff(self.level_ptr)[rows]
        first = self.level_ptr[:-1][rows]
        take = np.repeat(first - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(counts.sum())
        return Levels(self.order[rows], np.r_[0, np.cumsum(counts)], self.starts[take])

    def mirrored(self):
        """The mirror image: positions and levels reversed (the least preferred level first)."""
        ends = self._ends()
        inst = np.repeat(np.arange(self.n_instances), np.diff(self.level_ptr))
        flip = self.level_ptr[inst] + self.level_ptr[inst + 1] - 1 - np.arange(self.starts.size)
        starts = np.empty_like(self.starts)
        starts[flip] = self.n_labels - ends
        return Levels(self.order[:, ::-1], self.level_ptr, starts)

    def same_as(self, other):
        return (np.array_equal(self.order, other.order) and np.array_equal(self.level_ptr, other.level_ptr)
                and np.array_equal(self.starts, other.starts))


class Subgraphs:
    """The subgraphs of a decomposition, flat: instance i owns subgraphs sub_ptr[i] .. sub_ptr[i + 1] - 1 and
    subgraph k holds the edges members[member_ptr[k] .. member_ptr[k + 1] - 1] (indices into the graphs' edge
    arrays; an edge may belong to several subgraphs of a user decomposition). n_subgraphs[i] = s_i.
    ``members=None``: the identity (membership t is edge t, as in "zero_one", "disagreement" and "domination",
    whose subgraphs are runs of consecutive edges), stored as nothing: the kernels take ``kernel_members`` (empty
    for the identity) and ``members`` builds the index array on request."""

    def __init__(self, sub_ptr, member_ptr, members=None):
        self.sub_ptr = np.ascontiguousarray(sub_ptr, dtype=np.int64)
        self.member_ptr = np.ascontiguousarray(member_ptr, dtype=np.int64)
        self.kernel_members = (np.zeros(0, dtype=np.int64) if members is None else
                               np.ascontiguousarray(members, dtype=np.int64))
        self.identity = members is None

    @property
    def n_memberships(self):
        return int(self.member_ptr[-1])

    @property
    def members(self):
        """The edge of every membership (int64; built on each request for the identity)."""
        return np.arange(self.n_memberships, dtype=np.int64) if self.identity else self.kernel_members

    @property
    def n_subgraphs(self):
        return np.diff(self.sub_ptr)

    def instance_of_subgraph(self):
        return np.repeat(np.arange(self.sub_ptr.size - 1), self.n_subgraphs)


class PreferenceGraphs:
    """Preference graphs of n_instances instances over n_labels labels (module docstring).

    Build them with the constructors: :meth:`from_indicator` (multilabel, Fig. 1b), :meth:`from_classes`
    (single label, Fig. 1a), :meth:`from_relevance` (graded, multi-layer, Fig. 1c), :meth:`from_hierarchy`
    (leaves of a label tree layered by tree distance, section 4) and :meth:`from_edges` (any graphs, Fig. 1d).
    """

    def __init__(self, edge_ptr, init, term, n_labels):
        if isinstance(n_labels, (int, np.integer)) and not isinstance(n_labels, (bool, np.bool_)):
            check_n_labels(n_labels, 0, "PreferenceGraphs", inferred=False)
        self._edge_ptr, self._init, self._term, self.n_labels = check_preference_edges(edge_ptr, init, term,
                                                                                       n_labels)
        self.levels = None

    @classmethod
    def _from_levels(cls, levels):
        """Graphs in the level form (valid by construction: simple, labels in range); edges built on request."""
        graphs = cls.__new__(cls)
        graphs.levels, graphs.n_labels = levels, int(levels.n_labels)
        graphs._edge_ptr = graphs._init = graphs._term = None
        return graphs

    def __setstate__(self, state):
        if "edge_ptr" in state:  # pickled before the level form: the edge arrays as plain attributes
            state = dict(state, levels=None)
            for name in ("edge_ptr", "init", "term"):
                state["_" + name] = state.pop(name)
        self.__dict__.update(state)

    # ------------------------------------------------------------------------------------------ edges
    @property
    def edge_ptr(self):
        """The offsets of every instance's edges (int64, n_instances + 1; from the level form without its edges)."""
        if self._edge_ptr is None:
            ptr = np.zeros(self.levels.n_instances + 1, dtype=np.int64)
            np.cumsum(self.levels.edge_counts(), out=ptr[1:])
            self._edge_ptr = ptr
        return self._edge_ptr

    @property
    def init(self):
        """The preferred label of every edge (int32; built from the level form on first request)."""
        if self._init is None:
            self._init, self._term = _graphs.level_edges(self.levels.order, self.levels.level_ptr,
                                                         self.levels.starts, self.edge_ptr)
        return self._init

    @property
    def term(self):
        """The less preferred label of every edge (int32; built from the level form on first request)."""
        if self._term is None:
            self.init
        return self._term

    # ------------------------------------------------------------------------------------------ sizes
    @property
    def n_instances(self):
        return self.edge_ptr.shape[0] - 1 if self.levels is None else self.levels.n_instances

    @property
    def n_edges(self):
        return int(self.edge_ptr[-1])

    def __len__(self):
        return self.n_instances

    def __repr__(self):
        return f"PreferenceGraphs({self.n_instances} instances, {self.n_labels} labels, {self.n_edges} edges)"

    def instance_of_edge(self):
        """The instance of every edge (int64)."""
        return np.repeat(np.arange(self.n_instances), np.diff(self.edge_ptr))

    def __getitem__(self, rows):
        """The graphs of the given instances (an index array, a boolean mask or a slice), in that order."""
        try:
            rows = np.arange(self.n_instances)[rows]
        except IndexError as e:
            raise IndexError(f"cannot select graphs by {_describe_index(rows)}: {e}. These graphs belong to "
                             f"{self.n_instances} instances; select them with a boolean mask of length "
                             f"{self.n_instances}, integer indices in [-{self.n_instances}, {self.n_instances}) "
                             f"or a slice") from None
        if self.levels is not None:
            return PreferenceGraphs._from_levels(self.levels.take(rows))
        counts = np.diff(self.edge_ptr)[rows]
        starts = self.edge_ptr[rows]
        take = np.repeat(starts - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(counts.sum())
        return PreferenceGraphs(np.r_[0, np.cumsum(counts)], self.init[take], self.term[take], self.n_labels)

    def __eq__(self, other):
        if not isinstance(other, PreferenceGraphs) or self.n_labels != other.n_labels:
            return False
        if self.levels is not None and other.levels is not None and self.levels.same_as(other.levels):
            return True
        return (np.array_equal(self.edge_ptr, other.edge_ptr) and np.array_equal(self.init, other.init)
                and np.array_equal(self.term, other.term))

    __hash__ = None

    # ------------------------------------------------------------------------------------------ constructors
    @classmethod
    def from_edges(cls, instance, init, term, *, n_instances=None, n_labels=None, duplicates="raise"):
        """Graphs from edge arrays: edge e of instance ``instance[e]`` prefers ``init[e]`` to ``term[e]``. Any
        order; cycles allowed. A repeated edge raises ValueError (``duplicates="drop"`` keeps one copy)."""
        instance = np.asarray(instance)
        init, term = np.asarray(init), np.asarray(term)
        if not (instance.shape == init.shape == term.shape) or instance.ndim != 1:
            raise ValueError(f"instance, init and term must be 1-d arrays of one length; got shapes "
                             f"{instance.shape}, {init.shape}, {term.shape}")
        for name, a in (("instance", instance), ("init", init), ("term", term)):
            if a.size and (a.dtype.kind not in "iu" or a.min() < 0):
                raise ValueError(f"{name} must hold non-negative integers")
        if n_instances is None:
            n_instances = int(instance.max()) + 1 if instance.size else 0
        if n_labels is None:
            top = int(max(init.max(initial=-1), term.max(initial=-1)))
            n_labels = check_n_labels(top + 1, np.unique(np.concatenate([init, term])).size, "from_edges")
        else:
            n_labels = check_n_labels(n_labels, 0, "from_edges", inferred=False)
        if instance.size and instance.max() >= n_instances:
            raise ValueError(f"instance {int(instance.max())} is out of range for n_instances={n_instances}")
        order = np.lexsort((term, init, instance))
        instance, init, term = instance[order], init[order], term[order]
        if duplicates not in ("raise", "drop"):
            raise ValueError(f"duplicates must be 'raise' or 'drop', got {duplicates!r}")
        same = (instance[1:] == instance[:-1]) & (init[1:] == init[:-1]) & (term[1:] == term[:-1])
        if same.any():
            if duplicates == "raise":
                e = int(np.flatnonzero(same)[0]) + 1
                raise ValueError(f"instance {int(instance[e])} repeats the edge {int(init[e])} -> {int(term[e])}; "
                                 "preference graphs are simple (pass duplicates='drop' to keep one copy)")
            keep = np.r_[True, ~same]
            instance, init, term = instance[keep], init[keep], term[keep]
        edge_ptr = np.r_[0, np.cumsum(np.bincount(instance, minlength=n_instances))]
        return cls(edge_ptr, init, term, n_labels)

    @classmethod
    def from_relevance(cls, R):
        """Multi-layer graphs from graded relevance R (n_instances x n_labels, dense or sparse; larger = more
        relevant): an edge from every label to every label with a smaller grade of the same instance (Fig. 1c).
        Labels of equal grade are not compared."""
        _check_matrix_labels(R, "R")
        R = np.ascontiguousarray(check_label_matrix(R, "R"))
        check_n_labels(R.shape[1], 0, "from_relevance", inferred=False)
        return cls._from_levels(Levels.from_grades(R))

    @classmethod
    def from_indicator(cls, Y):
        """Bipartite graphs from a multilabel indicator matrix Y (n_instances x n_labels, dense or sparse, 0/1):
        every relevant label is preferred to every irrelevant one (Fig. 1b)."""
        _check_matrix_labels(Y, "Y")
        Y = check_label_matrix(Y, "Y")
        if not np.isin(Y, (0, 1)).all():
            raise ValueError("Y must be a 0/1 indicator matrix; use from_relevance for graded labels")
        return cls.from_relevance(Y)

    @classmethod
    def from_classes(cls, y, n_labels=None):
        """Single-label graphs from class indices y (integers 0 .. n_labels - 1): the class is preferred to every
        other label (Fig. 1a)."""
        y = np.asarray(y)
        if y.ndim != 1 or y.size == 0 or y.dtype.kind not in "iu" or y.min() < 0:
            raise ValueError("y must be a non-empty 1-d array of class indices (non-negative integers)")
        if n_labels is None:
            n_labels = check_n_labels(int(y.max()) + 1, np.unique(y).size, "from_classes")
        else:
            n_labels = check_n_labels(n_labels, 0, "from_classes", inferred=False)
        if y.max() >= n_labels:
            raise ValueError(f"class {int(y.max())} is out of range for n_labels={n_labels}")
        return cls._from_levels(Levels.from_classes(y.astype(np.int32), n_labels))

    @classmethod
    def from_hierarchy(cls, parent, correct, n_layers=3):
        """Graphs over the leaves of a label tree (section 4): ``parent[v]`` is the parent of tree node v (-1 at
        the root); the labels are the leaves in increasing node order; ``correct`` (n_instances x n_leaves
        indicator, dense or sparse) marks each instance's correct leaves. A leaf's distance is its tree distance
        to the closest correct leaf; the layers are the distinct distances in increasing order with everything
        beyond the first ``n_layers - 1`` collapsed into the last layer (the paper uses 3). Every leaf is
        preferred to every leaf of a lower layer. An instance with no correct leaf gets no edge."""
        parent = np.asarray(parent)
        if parent.ndim != 1 or parent.dtype.kind not in "iu" or parent.size == 0:
            raise ValueError("parent must be a non-empty 1-d integer array (-1 at the root)")
        n_layers = check_param("n_layers", n_layers, low=2, integer=True)
        depth = _tree_depths(parent)
        leaves = np.setdiff1d(np.arange(parent.size), parent[parent >= 0])
        C = check_label_matrix(correct, "correct")
        if C.shape[1] != leaves.size:
            raise ValueError(f"correct has {C.shape[1]} columns but the tree has {leaves.size} leaves")
        if not np.isin(C, (0, 1)).all():
            raise ValueError("correct must be a 0/1 indicator matrix over the leaves")
        dist = _leaf_distances(parent, depth, leaves)
        R = np.zeros(C.shape, dtype=np.int64)
        for i in np.flatnonzero(C.any(axis=1)):
            nearest = dist[C[i] > 0].min(axis=0)  # each leaf's distance to its closest correct leaf
            levels = np.unique(nearest)
            layer = np.minimum(np.searchsorted(levels, nearest), n_layers - 1)
            R[i] = n_layers - 1 - layer
        return cls.from_relevance(R)

    # ------------------------------------------------------------------------------------------ decompositions
    def decompose(self, decomposition="domination"):
        """The :class:`Subgraphs` of a decomposition: one of DECOMPOSITIONS or a callable
        ``f(init, term, n_labels) -> list of arrays of edge positions`` applied to each instance's edges (local
        positions 0 .. n_edges_i - 1, each subgraph non-empty)."""
        n, E = self.n_instances, self.n_edges
        if callable(decomposition):
            return self._decompose_with(decomposition)
        if decomposition == "zero_one":
            has = np.diff(self.edge_ptr) > 0
            return Subgraphs(np.r_[0, np.cumsum(has)], np.r_[self.edge_ptr[:-1][has], E])
        if decomposition == "disagreement":
            return Subgraphs(self.edge_ptr, np.arange(E + 1))
        if decomposition == "domination":  # edges are sorted by init within each instance: no sort
            start = np.ones(E, dtype=bool)
            start[1:] = self.init[1:] != self.init[:-1]
            start[self.edge_ptr[:-1][self.edge_ptr[:-1] < E]] = True  # an instance's first edge
            firsts = np.flatnonzero(start)
            return Subgraphs(np.searchsorted(firsts, self.edge_ptr), np.r_[firsts, E])
        if decomposition == "dominated":
            key, inst = self.term, self.instance_of_edge()
            order = np.lexsort((key, inst))  # stable: edges of one (instance, label) stay in storage order
            k_inst, k_key = inst[order], key[order]
            start = np.r_[True, (k_inst[1:] != k_inst[:-1]) | (k_key[1:] != k_key[:-1])] if E else np.zeros(0, bool)
            firsts = np.flatnonzero(start)
            per_instance = np.bincount(k_inst[firsts], minlength=n)
            return Subgraphs(np.r_[0, np.cumsum(per_instance)], np.r_[firsts, E], order)
        raise ValueError(f"decomposition must be one of {DECOMPOSITIONS} or a callable, got {decomposition!r}")

    def _decompose_with(self, fun):
        sub_counts, member_ptr, members = [], [0], []
        for i in range(self.n_instances):
            lo, hi = self.edge_ptr[i], self.edge_ptr[i + 1]
            parts = fun(self.init[lo:hi].copy(), self.term[lo:hi].copy(), self.n_labels) if hi > lo else []
            for part in parts:
                part = np.asarray(part)
                if part.ndim != 1 or part.size == 0 or part.dtype.kind not in "iu":
                    raise ValueError(f"decomposition of instance {i}: every subgraph must be a non-empty 1-d "
                                     "integer array of edge positions")
                if part.min() < 0 or part.max() >= hi - lo:
                    raise ValueError(f"decomposition of instance {i}: edge position out of range 0..{hi - lo - 1}")
                if np.unique(part).size != part.size:
                    raise ValueError(f"decomposition of instance {i}: a subgraph repeats an edge")
                members.append(lo + part.astype(np.int64))
                member_ptr.append(member_ptr[-1] + part.size)
            sub_counts.append(len(parts))
        return Subgraphs(np.r_[0, np.cumsum(sub_counts, dtype=np.int64)], member_ptr,
                         np.concatenate(members) if members else np.zeros(0, np.int64))


def _tree_depths(parent):
    """Depth of every node (root 0); a ValueError for anything but one rooted tree."""
    n = parent.size
    if np.count_nonzero(parent < 0) != 1 or parent.min() < -1 or parent.max() >= n:
        raise ValueError("parent must describe one rooted tree: exactly one -1 (the root) and parents in range")
    depth = np.full(n, -1, dtype=np.int64)
    depth[parent < 0] = 0
    for _ in range(n):
        todo = depth < 0
        if not todo.any():
            return depth
        ready = todo & (depth[np.maximum(parent, 0)] >= 0)
        if not ready.any():
            break
        depth[ready] = depth[parent[ready]] + 1
    raise ValueError("parent has a cycle: not a tree")


def _leaf_distances(parent, depth, leaves):
    """Tree distance between every two leaves: depth a + depth b - 2 depth(lowest common ancestor)."""
    ancestors = [set() for _ in leaves]
    for t, leaf in enumerate(leaves):
        v = leaf
        while v >= 0:
            ancestors[t].add(int(v))
            v = parent[v]
    m = leaves.size
    dist = np.zeros((m, m), dtype=np.int64)
    for a in range(m):
        for b in range(a + 1, m):
            lca_depth = max(depth[v] for v in ancestors[a] & ancestors[b])
            dist[a, b] = dist[b, a] = depth[leaves[a]] + depth[leaves[b]] - 2 * lca_depth
    return dist


def as_graphs(G, n_instances=None):
    """``G`` as PreferenceGraphs: graphs pass through; a 2-d 0/1 indicator matrix (dense or sparse) becomes
    bipartite graphs (from_indicator). ``n_instances`` checks the length."""
    if G is None:
        raise ValueError("label ranking requires y to be passed, but the target y is None (give preference graphs, "
                         "a multilabel indicator matrix or class labels)")
    if not isinstance(G, PreferenceGraphs):
        if sp.issparse(G) or np.ndim(G) == 2:
            G = PreferenceGraphs.from_indicator(G)
        else:
            raise TypeError("G must be PreferenceGraphs or a 2-d multilabel indicator matrix; got "
                            f"{type(G).__name__}")
    if n_instances is not None and G.n_instances != n_instances:
        raise ValueError(f"G has {G.n_instances} instances but X has {n_instances} rows; lengths must match")
    return G
