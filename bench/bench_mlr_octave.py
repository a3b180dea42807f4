"""cyrank's MLR beside the MATLAB original, MLR v1.1 under GNU Octave, in one run (issue 32; results in
bench/RESULTS.md, section "MLR").

    python bench/bench_mlr_octave.py [--repeat 3] [--cases wine:auc,wdbc:map] [--matched] [--check-oracles [N]]
                                     [--quick] [--mlr-dir DIR] [--mlr-git PATH] [--timeout 1800]

Cases: Wine and WDBC (scikit-learn's load_wine / load_breast_cancer), each z-scored on the whole set two ways
(ddof 0: StandardScaler's population std; ddof 1: MATLAB's zscore, the sample std), x the losses AUC, Prec@k,
MAP, MRR and NDCG (k = 3), trace regulariser, C = 1e5, every point a query (relevant = its class).
``--cases`` keeps some of them (``data:loss[:ddof]``, comma-separated: ``wine:auc,wdbc:map:1``); ``--quick`` is
a smoke run (AUC on Wine, both z-scores, one repeat).

* Octave: ``mlr_train(X', y, 1e5, LOSS)`` (y the 1-based labels), CPU seconds by ``cputime`` around that call
  only, one Octave process per case and repeat, OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = 1 (Octave's cputime
  counts every BLAS thread). The data go through a .mat file in a temporary directory (removed afterwards).
  Reported: its oracle calls (D.num_calls_SO), its slack Xi and its own objective tr(W)/d + C Xi.
* cyrank: ``MLR(loss=..., k=3, C=1e5).fit(Z, y)`` under threadpool_limits(1, "blas"), CPU seconds by
  time.process_time. Reported: n_separations_, objective_ = tr(W) + C xi (exact), gap_ / (C tol), converged_.
* Each case runs ``--repeat`` times (default 3), Octave and cyrank alternating; the tables give the best CPU time
  and the range. The 1-minute load average is printed per case: other jobs may share the machine.
* The Octave W is also evaluated exactly by cyrank's oracles (cyrank.mlr._constraints.Separation):
  xi(W_octave), hence tr(W)/d + C xi in MATLAB's scaling and tr(W) + C xi in cyrank's.
* ``--matched`` also times cyrank at C = d 1e5: the problem MATLAB solves at C = 1e5 (difference 1 below).
* ``--check-oracles [N]`` also runs each v1.1 oracle on N (40) random small queries against brute force
  (difference 5 below).

The peer (never inside this repository)
---------------------------------------
Octave: ``octave`` and ``mkoctfile`` on PATH; otherwise, as root with apt-get, the script runs
``apt-get update && apt-get install -y octave liboctave-dev octave-image`` (octave-image: NDCG calls padarray);
otherwise it exits saying so. MLR v1.1 (github.com/bmcfee/mlr, tag v1.1, commit 5081487): ``--mlr-dir`` (default
$MLR_DIR, else ~/.cache/cyrank-bench/mlr-v1.1). A missing directory is filled from ``--mlr-git PATH`` (a local
clone or mirror: ``git --git-dir PATH archive <commit> | tar -x``) or by ``git clone`` from GitHub and a checkout
of the commit. The directory's content is verified against the commit's tree (git write-tree in a temporary
index; built MEX files excluded), and the two MEX files it needs are built when absent: util/cummax.mex (NDCG
and MAP; it shadows Octave's built-in cummax) and util/binarysearch.mex (Prec@k and MRR). By
hand, the same peer:

    sudo apt-get update && sudo apt-get install -y octave liboctave-dev octave-image
    git clone https://github.com/bmcfee/mlr ~/.cache/cyrank-bench/mlr-v1.1
    git -C ~/.cache/cyrank-bench/mlr-v1.1 checkout -q 508148714d60fecfc9340d5e5dddd703ff4abc17
    cd ~/.cache/cyrank-bench/mlr-v1.1/util && mkoctfile --mex cummax.c && mkoctfile --mex binarysearch.c

Differences between the two problems and solvers (read in the MLR v1.1 source)
----------------------------------------------------------------------------
1. Scaling of C. regularize/regularizeTraceFull.m returns trace(W) / d, and util/mlr_solver.m minimises
   f = C max(Xi, 0) + REG(W): MLR v1.1 minimises tr(W)/d + C xi, cyrank tr(W) + C xi. So MATLAB's C equals
   cyrank's C / d: cyrank at C = 1e5 is MATLAB at C = 1e5/d (Wine d = 13: 7.7e3; WDBC d = 30: 3.3e3), and MATLAB
   at C = 1e5 (what is timed here, as in the issue) is cyrank at C = d 1e5, a less regularised problem
   (``--matched`` times that one as well).
2. Stopping. mlr_train.m stops when the new constraint's violation max(0, M - <W, dPsi>) is <= Xi + E, E = 1e-3,
   Xi the slack of the last restricted solve. That solve (util/mlr_solver.m) is projected subgradient descent
   on C max_t hinge_t(W) + tr(W)/d (the subgradient of the most violated working constraint; step size x
   golden^(1/3) after each accepted step, x 1/golden on each failed sufficient-decrease test, Armijo constant
   1e-5, first step 1e-6; eigenvalue clipping onto the PSD cone, feasible/feasibleFull.m), stopped when
   log(f(t - 10) / f(t)) <= 1e-5, after 1e4 steps or after 100 failed steps in a row. Neither Xi nor the stop is
   certified: no dual bound is computed. A working constraint that was not the most violated one at any step of
   100 consecutive solves is dropped (ConstraintClock; not reached in these runs, which make fewer than 100
   solves). cyrank stops when its certified gap objective - lower bound is <= C tol, tol = 0.01 (objective
   exact, lower bound a dual value), with the in-out stabilised cutting planes of cyrank/mlr/solver.py.
3. Start. initialize/initializeFull.m: W0 = diag(1 ./ std(X, 1, 2)) (the population std of each feature; 1 for a
   constant one), i.e. about the identity on z-scored data (exactly I for ddof 0, sqrt(n / (n - 1)) I for
   ddof 1). cyrank starts from W = 0.
4. AUC's margin. separationOracleAUC.m, line 45: ``Loss = 1 - sum(NegsBefore) / (numPos * numNeg * 2)``.
   NegsBefore(j) is the number of irrelevant points ranked above the j-th relevant one in the returned ranking
   Y, so sum(NegsBefore) / (numPos numNeg) = 1 - AUC(Y) and the returned Loss is 1 - (1 - AUC(Y)) / 2 =
   (1 + AUC(Y)) / 2, not the 1 - AUC(Y) of the file's own header comment. Evidence, the oracle called by itself
   under Octave 7.3 on one query with relevant points at squared distances 1, 2 and irrelevant ones at 10, 11:
   it returns Y = [2 3 4 5] (perfectly ordered) and Loss = 1; with the distances reversed, Y = [4 5 2 3] and
   Loss = 0.5; with all distances 0 (W = 0), Loss = 0.5. The ranking itself is the right argmax for
   Delta = 1 - AUC (an irrelevant point goes above a relevant one iff its score is higher minus 0.5, where the
   pair's loss 1 / (numPos numNeg) exceeds its margin term 2 (s+ - s-) / (numPos numNeg) in metricPsiPO.m),
   but the Loss is what cuttingPlaneFull.m averages into the constraint's margin M, lossHinge.m being
   max(0, M - <W, dPsi>). So MLR v1.1's AUC constraints ask for margins in [0.5, 1] that grow as the
   ranking gets better: a perfectly ranked batch has dPsi = 0 and M = 1, forcing xi >= 1. Measured on Wine
   (ddof 1, C = 1e5): the batches' margins are 0.94-0.99 and the final Xi is 1.078, while the exact xi
   (Delta = 1 - AUC) is 0.105 at that W and 0.039 at cyrank's solution (the second table). The line is the same
   in v1.0 and in the repository's last commit (370942b, 2013). The other oracles return 1 - score (MAP on the
   perfectly ordered query above: Loss = 0). MLR v1.1's AUC times are therefore those of a different problem;
   the problem table shows both objectives.
5. Exactness of the oracles (``--check-oracles``). Against brute force over all orderings of small queries, in
   MLR's own terms (its Delta = 1 - score and its feature map metricPsiPO.m), the v1.1 oracles for AUC and MRR
   return the most violated ranking every time, those for Prec@k, MAP and NDCG do not (under Octave 7.3, with
   the MEX files built from the v1.1 sources; measured: of 40 queries, 25, 12 and 20 rankings not the most
   violated, short by up to 2.7, 0.23 and 1.8, some below the value 0 of the correct ranking; with the feature
   map scaled by 1/4, 1/2 or 2 instead, they miss on 8-27 of 30 queries as well). A cutting-plane
   method whose oracle misses the most violated constraint stops early: on Wine, MLR v1.1's MAP and Prec@k
   end with Xi = 0 after 3 and 17 oracle calls, whereas cyrank's exact oracles put xi at 0.79 and 0.72 at that
   W (the second table's "exact xi"). So MLR v1.1's Prec@k, MAP and NDCG times are those of an inexact method;
   cyrank's oracles equal brute force (tests/test_mlr_oracles.py).
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy.io
from sklearn.datasets import load_breast_cancer, load_wine
from threadpoolctl import threadpool_limits

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

from cyrank.mlr import MLR  # noqa: E402
from cyrank.mlr._constraints import Separation  # noqa: E402

MLR_URL = "https://github.com/bmcfee/mlr"
MLR_COMMIT = "508148714d60fecfc9340d5e5dddd703ff4abc17"  # tag v1.1
MLR_TREE = "d8446a76ca9ec608f374e51daeaa2fc3aba6b3b0"  # that commit's tree: what the MLR directory must hold
MEX = ("cummax", "binarysearch")  # util/*.c the v1.1 oracles call
APT = ("octave", "liboctave-dev", "octave-image")
C = 1e5
K = 3
TOL = 0.01
DATA = {"wine": load_wine, "wdbc": load_breast_cancer}
# loss: (cyrank's name, cyrank's oracle name, mlr_train's name)
LOSSES = {"auc": ("auc", "auc", "AUC"), "prec@k": ("p", "prec@k", "Prec@k"), "map": ("map", "map", "MAP"),
          "mrr": ("mrr", "mrr", "MRR"), "ndcg": ("ndcg", "ndcg", "NDCG")}
THREAD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
OCTAVE_FLAGS = ("--no-gui", "--no-window-system", "--norc", "--quiet")

# one training run; {pkg} loads octave-image for NDCG (padarray)
DRIVER = """warning('off', 'all');
{pkg}
addpath(genpath('{mlr}'));
load('{inp}');
t0 = cputime();
[W, Xi, D] = mlr_train(X', y, C, loss);
t = cputime() - t0;
calls = D.num_calls_SO;
solves = D.num_calls_solver;
objective = trace(W) / size(W, 1) + C * Xi;
save('-v7', '{out}', 'W', 'Xi', 't', 'calls', 'solves', 'objective');
"""

# --check-oracles: each v1.1 oracle on random small queries against brute force over all orderings, in MLR's own
# terms: Delta(Y) = 1 - score(Y) (score as each oracle's Loss line computes it) and
# <W, psi(y*) - psi(Y)> = 2 sum over (relevant p, irrelevant q ranked above p) of (s_p - s_q) / (nP nN)
# (metricPsiPO.m, the feature map mlr_train uses with every loss), scores s = -squared distance
CHECK = """1;
function x = delta(loss, Y, pos, neg, k)
  rel = ismember(Y, pos); nP = numel(pos); nN = numel(neg);
  switch loss
    case 'AUC'
      negabove = cumsum(~rel); x = sum(negabove(rel)) / (nP * nN);
    case 'MAP'
      prec = cumsum(rel)' ./ (1:numel(Y)); x = 1 - mean(prec(rel));
    case 'MRR'
      x = 1 - 1 / find(rel, 1);
    case 'PrecAtK'
      kk = min([k, nP, nN]); x = 1 - sum(rel(1:kk)) / kk;
    case 'NDCG'
      kk = min(k, nP); disc = ones(kk, 1); disc(3:end) = 1 ./ log2(3:kk);
      x = 1 - sum(disc .* rel(1:kk)) / sum(disc);
  end
end
function t = margin(Y, pos, neg, s)
  r = zeros(max(Y), 1); r(Y) = 1:numel(Y); t = 0;
  for p = pos'
    for q = neg'
      if r(q) < r(p) t = t + 2 * (s(p) - s(q)); end
    end
  end
  t = t / (numel(pos) * numel(neg));
end
warning('off', 'all');
{pkg}
addpath(genpath('{mlr}'));
D = zeros(5); D(2:5, 1) = [1; 2; 10; 11]; D(1, 2:5) = D(2:5, 1)';
[Y, L] = separationOracleAUC(1, D, [2; 3], [4; 5], 3);
printf('auc-perfect %s %g\\n', mat2str(Y'), L);
D(2:5, 1) = [10; 11; 1; 2]; D(1, 2:5) = D(2:5, 1)';
[Y, L] = separationOracleAUC(1, D, [2; 3], [4; 5], 3);
printf('auc-reversed %s %g\\n', mat2str(Y'), L);
for name = {{'AUC', 'PrecAtK', 'MAP', 'MRR', 'NDCG'}}
  loss = name{{1}}; SO = str2func(['separationOracle' loss]); rand('seed', 1);
  bad = 0; worst = 0; lossdiff = 0;
  for trial = 1:{trials}
    nP = 2 + floor(2 * rand); nN = 2 + floor(2 * rand); n = nP + nN + 1;
    pos = (2:nP + 1)'; neg = (nP + 2:n)';
    D = zeros(n); D(2:n, 1) = 3 * rand(n - 1, 1); D(1, 2:n) = D(2:n, 1)'; s = -D(:, 1);
    [Y, L] = SO(1, D, pos, neg, 3);
    v = delta(loss, Y, pos, neg, 3) - margin(Y, pos, neg, s);
    lossdiff = lossdiff + (abs(L - delta(loss, Y, pos, neg, 3)) > 1e-12);
    P = perms([pos; neg]); best = -Inf;
    for r = 1:size(P, 1)
      best = max(best, delta(loss, P(r, :)', pos, neg, 3) - margin(P(r, :)', pos, neg, s));
    end
    if best > v + 1e-12 bad = bad + 1; worst = max(worst, best - v); end
  end
  printf('oracle %s %d %d %.4g %d\\n', loss, {trials}, bad, worst, lossdiff);
end
"""


def fail(msg):
    sys.exit(f"bench_mlr_octave: {msg}")


def quote(path):
    """An Octave single-quoted string literal."""
    return path.replace("'", "''")


# --------------------------------------------------------------------------------------------- the peer
def find_octave():
    """Paths of octave and mkoctfile; installed by apt-get when missing and we are root."""
    have = shutil.which("octave") and shutil.which("mkoctfile")
    if not have and os.geteuid() == 0 and shutil.which("apt-get"):
        print(f"# installing GNU Octave: apt-get update && apt-get install -y {' '.join(APT)}", flush=True)
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        for cmd in (["apt-get", "update"], ["apt-get", "install", "-y", *APT]):
            if subprocess.run(cmd, env=env).returncode:
                fail(f"`{' '.join(cmd)}` failed")
        have = shutil.which("octave") and shutil.which("mkoctfile")
    if not have:
        fail("GNU Octave (octave and mkoctfile) not found on PATH. Install it, e.g. "
             f"`sudo apt-get update && sudo apt-get install -y {' '.join(APT)}` (Debian/Ubuntu), then rerun.")
    return shutil.which("octave"), shutil.which("mkoctfile")


def octave_env():
    return dict(os.environ, **THREAD_ENV)


def run_octave(octave, code, timeout, cwd=None):
    r = subprocess.run([octave, *OCTAVE_FLAGS, "--eval", code], capture_output=True, text=True, env=octave_env(),
                       timeout=timeout, cwd=cwd)
    return r


def inside_repo(path):
    path, repo = os.path.realpath(path), os.path.realpath(REPO)
    return path == repo or path.startswith(repo + os.sep)


def tree_of(directory):
    """git's tree id of ``directory``'s content (built files excluded), through a throw-away index."""
    with tempfile.TemporaryDirectory() as tmp:
        git = ["git", f"--git-dir={tmp}/g", f"--work-tree={directory}"]
        subprocess.run(["git", "init", "-q", "--bare", f"{tmp}/g"], check=True)
        with open(f"{tmp}/g/info/exclude", "w") as f:
            f.write("*.mex\n*.o\n*.oct\noctave-workspace\n")
        subprocess.run(git + ["add", "-A", "."], check=True, cwd=directory, capture_output=True)
        return subprocess.run(git + ["write-tree"], check=True, capture_output=True, text=True).stdout.strip()


def obtain_mlr(mlr_dir, mlr_git):
    """Fill the missing ``mlr_dir`` with MLR v1.1: from a local clone / mirror, else from GitHub (atomically:
    into a sibling temporary directory, then renamed)."""
    parent = os.path.dirname(os.path.abspath(mlr_dir))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".mlr-", dir=parent)
    try:
        src = tmp
        if mlr_git:
            print(f"# MLR v1.1 from {mlr_git}: git --git-dir {mlr_git} archive {MLR_COMMIT} | tar -x", flush=True)
            arch = subprocess.Popen(["git", f"--git-dir={mlr_git}", "archive", MLR_COMMIT], stdout=subprocess.PIPE)
            untar = subprocess.run(["tar", "-x", "-C", tmp], stdin=arch.stdout)
            arch.stdout.close()
            if arch.wait() or untar.returncode:
                fail(f"could not extract commit {MLR_COMMIT} from {mlr_git} (is it a clone of {MLR_URL}?)")
        else:
            print(f"# MLR v1.1: git clone {MLR_URL} && git checkout {MLR_COMMIT}", flush=True)
            src = os.path.join(tmp, "mlr")
            if (subprocess.run(["git", "clone", "-q", MLR_URL, src]).returncode
                    or subprocess.run(["git", "-C", src, "checkout", "-q", MLR_COMMIT]).returncode):
                fail(f"could not clone {MLR_URL} at {MLR_COMMIT}; without network, pass --mlr-git PATH (a local "
                     f"clone) or --mlr-dir DIR (an extracted copy of tag v1.1)")
        os.rename(src, mlr_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def locate_mlr(mlr_dir, mlr_git, mkoctfile):
    mlr_dir = os.path.abspath(os.path.expanduser(mlr_dir))
    if inside_repo(mlr_dir):
        fail(f"--mlr-dir {mlr_dir} is inside the repository; keep the MATLAB code outside it")
    if not os.path.isdir(mlr_dir):
        obtain_mlr(mlr_dir, mlr_git)
    tree = tree_of(mlr_dir)
    if tree != MLR_TREE:
        fail(f"{mlr_dir} is not MLR v1.1 (commit {MLR_COMMIT}): its content has tree {tree}, expected {MLR_TREE}. "
             f"Remove it (it is refilled from --mlr-git or GitHub) or point --mlr-dir elsewhere.")
    util = os.path.join(mlr_dir, "util")
    for name in MEX:
        if not os.path.exists(os.path.join(util, name + ".mex")):
            print(f"# building {util}/{name}.mex: mkoctfile --mex {name}.c", flush=True)
            r = subprocess.run([mkoctfile, "--mex", name + ".c"], cwd=util, capture_output=True, text=True)
            if r.returncode:
                fail(f"mkoctfile --mex {name}.c failed in {util}:\n{r.stdout}{r.stderr}")
            obj = os.path.join(util, name + ".o")
            if os.path.exists(obj):
                os.remove(obj)
    return mlr_dir


def check_peer(octave, mlr_dir, need_image, timeout):
    """Octave's version line; fails unless MLR's MEX files shadow Octave's functions (and padarray loads)."""
    code = (f"warning('off', 'all'); addpath(genpath('{quote(mlr_dir)}'));"
            + " printf('which %s\\n', which('cummax'), which('binarysearch'));"
            + (" pkg load image; printf('which %s\\n', which('padarray'));" if need_image else ""))
    r = run_octave(octave, code, timeout)
    found = [line[6:] for line in r.stdout.splitlines() if line.startswith("which ")]
    want = [os.path.join(mlr_dir, "util", n + ".mex") for n in MEX]
    if found[:2] != want:
        fail(f"Octave does not find MLR's MEX files {want} first (found {found}):\n{r.stderr}")
    if need_image and (len(found) < 3 or not found[2]):
        fail("NDCG needs padarray from Octave's image package: `sudo apt-get install -y octave-image`\n" + r.stderr)
    v = subprocess.run([octave, "--version"], capture_output=True, text=True, env=octave_env())
    return v.stdout.splitlines()[0]


def check_oracles(octave, mlr_dir, trials, timeout):
    """The --check-oracles table (the CHECK script above, one Octave process)."""
    r = run_octave(octave, CHECK.format(pkg="pkg load image;", mlr=quote(mlr_dir), trials=trials), timeout)
    lines = [line.split() for line in r.stdout.splitlines()]
    rows = [line for line in lines if line and line[0] == "oracle"]
    if r.returncode or len(rows) != len(LOSSES):
        fail(f"the oracle check failed (exit {r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    auc = {line[0]: " ".join(line[1:]) for line in lines if line and line[0].startswith("auc-")}
    print(f"MLR v1.1's oracles on {trials} random queries each (2-3 relevant, 2-3 irrelevant points, squared "
          f"distances uniform in [0, 3)), against brute force over all orderings of max_Y Delta(Y) - "
          f"<W, psi(y*) - psi(Y)> in MLR's own terms (Delta = 1 - score as each oracle's Loss line computes it, psi "
          f"of metricPsiPO.m). AUC's oracle on a perfectly ordered query (relevant at squared distances 1, 2; "
          f"irrelevant at 10, 11): Y, Loss = {auc.get('auc-perfect')}; reversed: {auc.get('auc-reversed')}.\n")
    print("| oracle | queries | ranking not the most violated | largest shortfall | Loss != 1 - score(Y) |")
    print("|---|---:|---:|---:|---:|")
    for _, loss, n, bad, worst, diff in rows:
        print(f"| {loss} | {n} | {bad} | {float(worst):.3g} | {diff} |")
    print()


# --------------------------------------------------------------------------------------------- runs
def load(name, ddof):
    X, y = DATA[name](return_X_y=True)
    X = X.astype(np.float64)
    Z = (X - X.mean(axis=0)) / X.std(axis=0, ddof=ddof)
    return Z, np.unique(y, return_inverse=True)[1].astype(np.int64)


def run_mlr_octave(octave, mlr_dir, tmp, Z, labels, loss, timeout):
    """One Octave process: mlr_train on (Z, labels + 1); (CPU s, W, Xi, oracle calls, its objective)."""
    inp, out = os.path.join(tmp, "data.mat"), os.path.join(tmp, "result.mat")
    for p in (inp, out):
        if os.path.exists(p):
            os.remove(p)
    scipy.io.savemat(inp + ".part.mat", {"X": Z, "y": (labels + 1.0)[:, None], "C": C, "loss": LOSSES[loss][2]})
    os.replace(inp + ".part.mat", inp)
    code = DRIVER.format(pkg="pkg load image;" if loss == "ndcg" else "", mlr=quote(mlr_dir), inp=quote(inp),
                         out=quote(out))
    r = run_octave(octave, code, timeout, cwd=tmp)
    if r.returncode or not os.path.exists(out):
        fail(f"Octave's mlr_train failed (exit {r.returncode}):\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    res = scipy.io.loadmat(out)
    W = res["W"]
    return dict(t=res["t"].item(), W=0.5 * (W + W.T), Xi=res["Xi"].item(), calls=int(res["calls"].item()),
                objective=res["objective"].item())


def run_cyrank(Z, labels, loss, C_):
    with threadpool_limits(1, "blas"):
        t0 = time.process_time()
        m = MLR(loss=LOSSES[loss][0], k=K, C=C_, tol=TOL).fit(Z, labels)
        return time.process_time() - t0, m


def exact_xi(Z, labels, loss, W):
    """xi(W) = mean over queries of the most violated constraint, by cyrank's exact oracles."""
    with threadpool_limits(1, "blas"):
        return max(0.0, Separation(Z, ("labels", labels), LOSSES[loss][1], K)(W)[2])


def spread(ts):
    return f"{min(ts):.3f} ({min(ts):.3f}-{max(ts):.3f})" if len(ts) > 1 else f"{ts[0]:.3f}"


def same(values):
    vals = sorted(set(values))
    return str(vals[0]) if len(vals) == 1 else "-".join(map(str, (vals[0], vals[-1])))


def parse_cases(spec, quick):
    cases = [(name, ddof, loss) for name in DATA for ddof in (0, 1) for loss in LOSSES]
    if quick:
        return [c for c in cases if c[0] == "wine" and c[2] == "auc"]
    if not spec:
        return cases
    keep = []
    for item in spec.split(","):
        parts = item.strip().lower().split(":")
        if len(parts) not in (2, 3) or parts[0] not in DATA or parts[1] not in LOSSES or (
                len(parts) == 3 and parts[2] not in ("0", "1")):
            fail(f"--cases item {item!r}: expected data:loss[:ddof], data in {list(DATA)}, loss in {list(LOSSES)}, "
                 f"ddof 0 or 1")
        keep += [c for c in cases if c[0] == parts[0] and c[2] == parts[1] and (len(parts) == 2
                                                                                 or c[1] == int(parts[2]))]
    return [c for c in cases if c in keep]


def git_rev():
    r = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no", "--", "cyrank"],
                           capture_output=True, text=True).stdout.strip()
    return (r.stdout.strip() or "?") + (" (cyrank/ has uncommitted changes)" if dirty else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per case and side (best of; default 3)")
    ap.add_argument("--cases", default="", help="data:loss[:ddof],... e.g. wine:auc,wdbc:map:1 (default: all)")
    ap.add_argument("--quick", action="store_true", help="AUC on Wine only, one repeat (smoke run)")
    ap.add_argument("--matched", action="store_true", help="also time cyrank at C = d 1e5 (MATLAB's scaling)")
    ap.add_argument("--mlr-dir", default=os.environ.get("MLR_DIR", "~/.cache/cyrank-bench/mlr-v1.1"),
                    help="MLR v1.1 source (default $MLR_DIR or ~/.cache/cyrank-bench/mlr-v1.1; filled if missing)")
    ap.add_argument("--mlr-git", default=None, help="local clone / mirror of bmcfee/mlr to fill --mlr-dir from")
    ap.add_argument("--check-oracles", type=int, nargs="?", const=40, default=0, metavar="N",
                    help="also check the v1.1 oracles against brute force on N random small queries each (40)")
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per Octave process (default 1800)")
    args = ap.parse_args()
    repeat = 1 if args.quick else args.repeat
    if repeat < 1:
        fail("--repeat must be >= 1")
    cases = parse_cases(args.cases, args.quick)

    octave, mkoctfile = find_octave()
    mlr_dir = locate_mlr(args.mlr_dir, args.mlr_git, mkoctfile)
    version = check_peer(octave, mlr_dir, any(c[2] == "ndcg" for c in cases), args.timeout)

    print(f"# command: {' '.join([os.path.basename(sys.executable)] + sys.argv)}")
    print(f"# {version}; MLR v1.1 commit {MLR_COMMIT} (tree verified) in {mlr_dir}; Octave env "
          f"{' '.join(f'{k}={v}' for k, v in THREAD_ENV.items())}")
    print(f"# numpy {np.__version__}, scipy {scipy.__version__}, cyrank {git_rev()}, python "
          f"{sys.version.split()[0]}; cyrank one BLAS thread")
    print(f"# C = {C:g}, k = {K}, trace regulariser, cyrank tol = {TOL}; best of {repeat} (range), Octave and cyrank "
          f"alternating; CPU seconds (Octave: cputime around mlr_train; cyrank: time.process_time around fit)\n",
          flush=True)
    if args.check_oracles:
        check_oracles(octave, mlr_dir, args.check_oracles, args.timeout)

    rows = []
    with tempfile.TemporaryDirectory(prefix="cyrank-mlr-octave-") as tmp:
        for name, ddof, loss in cases:
            Z, labels = load(name, ddof)
            d = Z.shape[1]
            oct_runs, cy_runs, matched = [], [], []
            for _ in range(repeat):
                oct_runs.append(run_mlr_octave(octave, mlr_dir, tmp, Z, labels, loss, args.timeout))
                cy_runs.append(run_cyrank(Z, labels, loss, C))
                if args.matched:
                    matched.append(run_cyrank(Z, labels, loss, C * d))
            o = min(oct_runs, key=lambda r: r["t"])
            xi_o = exact_xi(Z, labels, loss, o["W"])
            row = dict(name=name, ddof=ddof, loss=loss, d=d, oct=oct_runs, cy=cy_runs, matched=matched, o=o,
                       xi_o=xi_o, tr_o=float(np.trace(o["W"])), load=os.getloadavg()[0])
            rows.append(row)
            tc = min(t for t, _ in cy_runs)
            print(f"# {name} ddof {ddof} {loss}: Octave {o['t']:.3f} s, cyrank {tc:.3f} s, "
                  f"{o['t'] / tc:.1f}x (load {row['load']:.2f})", file=sys.stderr, flush=True)

    print("| data | z-score | loss | Octave CPU s (best, range) | Octave oracle calls | cyrank CPU s (best, range) | "
          "cyrank separations | speed-up | load |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        to, tc = [x["t"] for x in r["oct"]], [t for t, _ in r["cy"]]
        print(f"| {r['name']} | ddof {r['ddof']} | {r['loss']} | {spread(to)} | {same(x['calls'] for x in r['oct'])} | "
              f"{spread(tc)} | {same(m.n_separations_ for _, m in r['cy'])} | {min(to) / min(tc):.1f}x | "
              f"{r['load']:.2f} |")

    print("\nThe two problems (Octave: its best run; cyrank: its last run). MATLAB's objective is tr(W)/d + C Xi with "
          "its working-set slack Xi; \"exact xi\" evaluates W by cyrank's oracles (Delta = 1 - score); cyrank's "
          "objective is tr(W) + C xi. AUC: MLR v1.1's margins are (1 + AUC)/2, not 1 - AUC (docstring, item 4), "
          "so its Xi and objective are on another scale. Prec@k, MAP, NDCG: MLR v1.1's oracles are not exact "
          "(item 5), so its Xi can be below the exact xi of its W.\n")
    print("| data | z-score | loss | d | Octave Xi | Octave tr(W)/d + C Xi | Octave W: exact xi | "
          "Octave W: tr(W) + C xi | cyrank xi_ | cyrank objective_ | cyrank gap / (C tol) | converged |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        o, m = r["o"], r["cy"][-1][1]
        print(f"| {r['name']} | ddof {r['ddof']} | {r['loss']} | {r['d']} | {o['Xi']:.4g} | {o['objective']:.6g} | "
              f"{r['xi_o']:.4g} | {r['tr_o'] + C * r['xi_o']:.6g} | {m.xi_:.4g} | {m.objective_:.6g} | "
              f"{m.gap_ / (C * TOL):.2f} | {m.converged_} |")

    if args.matched:
        print("\nMatched scaling: cyrank at C = d 1e5 minimises d (tr(W)/d + 1e5 xi), MATLAB's objective at C = 1e5 "
              "times d. \"Octave W\" is its W in that objective with the exact xi.\n")
        print("| data | z-score | loss | cyrank C = d 1e5 CPU s (best, range) | separations | speed-up | "
              "cyrank objective_ / d | Octave W: tr(W)/d + 1e5 xi | gap / (C tol) | converged |")
        print("|---|---|---|---:|---:|---:|---:|---:|---:|---|")
        for r in rows:
            to, tm = min(x["t"] for x in r["oct"]), [t for t, _ in r["matched"]]
            m = r["matched"][-1][1]
            print(f"| {r['name']} | ddof {r['ddof']} | {r['loss']} | {spread(tm)} | "
                  f"{same(mm.n_separations_ for _, mm in r['matched'])} | {to / min(tm):.1f}x | "
                  f"{m.objective_ / r['d']:.6g} | {r['tr_o'] / r['d'] + C * r['xi_o']:.6g} | "
                  f"{m.gap_ / (m.C * TOL):.2f} | {m.converged_} |")


if __name__ == "__main__":
    main()
