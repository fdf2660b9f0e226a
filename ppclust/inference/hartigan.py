r"""The online Hartigan engine of cross-entropy clustering (CEC, CEC-IB, C3L) and its batch steps.

Kept whole although over 700 lines: the online engine (XLA and compiled backends), its initialisation,
the batch steps and their version on rows spread over processes share one state, one move rule, one
set-up of the initial partitions and one result type; split, each part would import the private helpers
of the others.

The engine minimises a total cost :math:`E(Y) = \sum_k E(Y_k)` over hard partitions by the modified
Hartigan algorithm of Śmieja & Geiger (2017, Sec. 3.4; spec ``cecib.md`` §2): visit the points in
data order, move each one to the cluster that lowers the total cost most (strict decrease; staying
wins ties, ties between candidates go to the lowest index), update the statistics of the two
clusters touched, delete a cluster that falls below ``min_size`` points, and stop after a pass
without any move.

Two implementations take the same decisions (``backend``): ``"numba"``, the compiled CPU loop of
:mod:`ppclust.inference._hartigan_cpu` (all restarts in one call; the candidate costs of all K slots
from one vectorised, slot-major forward substitution, the point's own slot by the determinant lemma,
Cholesky factors changed only when a point moves), and ``"xla"``, the loop as one XLA program
(``vmap``-ed restarts spread over local devices with ``devices="auto"``; accelerators). ``"auto"``
picks the compiled loop on a CPU backend. ``tests/inference/test_hartigan_cpu.py`` checks each numba twin
against its JAX function to 1e-12 and both engines label for label; both replay the authors' jar.

For large n, :func:`fit_batch` runs batch (Lloyd-type) CEC steps, every point reassigned at once from
an n x K cost matrix (:func:`assignment_costs`), then optionally Hartigan passes (see its docstring for
when to use which). :func:`fit_batch_rows` takes the same steps on rows spread over processes
(:mod:`ppclust.distributed`): reduced statistics in the batch steps, the Hartigan passes handed from
process to process in row order.

Stopping (SIGINT during a fit, :func:`ppclust._progress.interruptible`): the compiled loop runs one
restart per call and the batch steps one restart per compiled program call, so a fit stops between
restarts with ``KeyboardInterrupt`` and the same results for any number of restarts.

Every point always ends in a live cluster and at least one cluster survives: when no initial slot is
usable all points start in one cluster, and orphans left by ``max_passes`` after a deletion are
reinserted at the end of the run.

The cost
--------
The engine minimises one concrete cost, :class:`ppclust.inference.cec.CECCost` (the CEC cost with the
optional label term of CEC-IB and leakage term of C3L; :mod:`ppclust.inference.cecib` and
:mod:`ppclust.inference.c3l` configure it). ``side`` is the (n,) int32 label category of every point
(-1 = unlabelled) or None. ``K`` slots of statistics (:class:`ppclust.inference.cec.CECStats`) have a
fixed shape. Per visited point the XLA engine does O(K d^2) work: for point i in slot a it computes
``removed = cost.remove(stats, a, x_i, side_i)`` and ``cost.cost_slot(removed, a)`` (the cost of a
without i), and ``cost.cost_add(stats, x_i, side_i)`` (every slot, matrix determinant lemma on the cached
Cholesky factors); an accepted move to b stores ``cost.add(removed, b, x_i, side_i)`` (rank-one
update). Per-cluster costs are cached; ``cost.cost`` is called only at initialisation. A dead slot's
statistics are never read again, so ``remove`` on it may return garbage (NaN) that the engine drops.

Move rule (exactly the authors' Java demo, ``reference/cecib/README.md`` "Optimiser semantics")
-----------------------------------------------------------------------------------------------
For point i in cluster a, candidate b ≠ a (active):
``Δ(b) = [E(Y_a∖i) − E(Y_a)] + [E(Y_b∪i) − E(Y_b)]``; a non-finite Δ counts as the largest finite
double. The point moves to ``argmin Δ`` if ``Δ < -tol`` (``tol = 0`` by default, as in the jar).
After point i is processed (moved or not) its previous cluster is deactivated when it holds fewer
than ``min_size`` points (never the last active cluster). After initialisation and after every pass,
active clusters with ``cost.degenerate`` true are deactivated too.

Points of a deactivated cluster ("orphans") are handled by ``reassign``:

* ``"lazy"`` (default; the authors' Java demo): the point keeps its stale label; when the pass reaches
  it, its baseline cost is +inf and it moves to the active cluster with the smallest insertion cost
  ``E(Y_b∪i) − E(Y_b)``. Until then it is in no cluster's statistics (the weights ``n_k / n`` keep the
  full ``n``). This mode replays the jar's fixed-centre runs exactly.
* ``"immediate"`` (spec §2.3 [ours]): right after a deletion the cluster's points are reinserted one
  at a time in index order, each into the cluster of smallest insertion cost.

A forced move of an orphan counts as a move, so the pass after a deletion always runs. Accepted
moves strictly decrease the cost; deletions may increase it (spec C8).

Initialisation: ``init="k-means++"`` (default, as in the authors' code: D^2 sampling of K distinct
points, then each point to its nearest seed in Euclidean distance, ties to the earlier seed),
``init="random"`` (uniform random partition, the paper's wording) or ``init="labels"`` with given
``centres`` (:func:`seeded_partitions`: those centres fixed -- e.g. the labelled classes' means -- the
remaining slots by k-means++ D^2 sampling given them, then the nearest-centre partition).
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ppclust import _progress
from ppclust._buckets import bucket_size, pad_rows, pad_vector, split_count
from ppclust._devices import axis_sharding
from ppclust.inference.cec import SING_TOL, CECCost, CECStats, constrained_fit_1d
from ppclust.inference.init import kmeanspp_indices, kmeanspp_uniforms

__all__ = [
    "HartiganResult",
    "HartiganFit",
    "HartiganInfo",
    "HartiganAlgorithm",
    "build",
    "BatchResult",
    "run",
    "seeded_partitions",
    "HartiganConfig",
    "fit",
    "fit_batch",
    "fit_batch_rows",
    "assignment_costs",
    "init_kmeanspp",
    "init_random",
    "voronoi",
    "kmeanspp_partition",
    "resolve_backend",
    "BACKENDS",
    "JITTER",
    "ridge",
    "singular_data",
    "max_start_clusters",
]

BACKENDS = ("auto", "numba", "xla")

Array = jax.Array
_BIG = float(jnp.finfo(jnp.float64).max)  # the jar's stand-in for an infinite candidate cost


class HartiganResult(NamedTuple):
    """Outcome of one (or the best of several) Hartigan runs.

    Attributes
    ----------
    labels : array of int32 of shape (n,)
        Cluster slot of every point (orphans not yet reassigned keep a dead slot).
    active : array of bool of shape (K,)
        Slots alive at the end.
    stats : cost statistics
        The cost object's statistics (rank-one updated during the run).
    costs : array of shape (K,)
        Cached per-cluster cost E(Y_k) (meaningful for active slots).
    cost : scalar
        Total cost, sum of ``costs`` over active slots.
    n_passes : int32 scalar
        Passes over the data, including the final pass without a move.
    converged : bool scalar
        False if ``max_passes`` was hit.
    trace : array of shape (max_passes + 1,)
        Total cost after initialisation (index 0) and after each pass (before the end-of-pass
        degeneracy check); NaN beyond ``n_passes``.
    n_clusters_trace : array of int32 of shape (max_passes + 1,)
        Active clusters at the same moments.

    Examples
    --------
    >>> from ppclust.inference.hartigan import HartiganResult
    >>> HartiganResult._fields[:3]
    ('labels', 'active', 'stats')
    """

    labels: Array
    active: Array
    stats: Any
    costs: Array
    cost: Array
    n_passes: Array
    converged: Array
    trace: Array
    n_clusters_trace: Array


class HartiganFit(NamedTuple):
    """Restarts of :func:`fit`: the best run and one entry per restart.

    Parameters
    ----------
    best : HartiganResult
        The first restart with the lowest final cost.
    costs : array (n_init,)
        Final cost of every restart (NaN/inf where a restart failed).
    n_passes : int32 array (n_init,)
        Passes of every restart.
    n_clusters : int32 array (n_init,)
        Active clusters at the end of every restart.

    Examples
    --------
    >>> from ppclust.inference.hartigan import HartiganFit
    >>> HartiganFit._fields
    ('best', 'costs', 'n_passes', 'n_clusters')
    """

    best: HartiganResult
    costs: Array
    n_passes: Array
    n_clusters: Array


class _State(NamedTuple):
    labels: Array
    active: Array
    stats: Any
    costs: Array
    moved: Array


#: Relative jitter of the covariance regularisation used when the data need it (see :func:`ridge`).
JITTER = 1e-6


def ridge(x, reg_covar: float) -> float:
    r"""The pseudo-scatter :math:`\rho I` added to every cluster's scatter for a relative regulariser.

    :math:`\rho = \texttt{reg\_covar}\cdot\operatorname{tr}(\Sigma_X)/d`, i.e. ``reg_covar`` times the
    data's mean variance (so it scales with the data's units; 1 if every feature is constant). A fixed
    ridge keeps the rank-one updates exact; a cluster of :math:`n_k` points then has covariance
    :math:`(S_k + \rho I)/n_k`. 0 for ``reg_covar = 0``.

    Parameters
    ----------
    x : array (n, d)
        The data.
    reg_covar : float
        Relative regulariser (>= 0).

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.hartigan import ridge
    >>> ridge(np.array([[0.0, 0.0], [2.0, 4.0]]), 0.1)  # mean variance (1 + 4) / 2
    0.25
    """
    if reg_covar <= 0:
        return 0.0
    x = np.asarray(x, np.float64)
    tr = float(np.sum(np.var(x, axis=0)))
    return float(reg_covar) * (tr / x.shape[1] if tr > 0 else 1.0)


def max_start_clusters(n_clusters: int, n: int, min_size: float) -> int:
    r"""The initial number of clusters, lowered to :math:`\lfloor n / \texttt{min\_size}\rfloor` (at least 1).

    A cluster below ``min_size`` points is deleted (its ML covariance needs ``d + 1`` points; CEC-IB's rule
    ``max(min_cluster_fraction n, d + 2)``, C3L's ``max(ceil(min_cluster_fraction n), d + 3)``), so a start
    with more clusters than :math:`n / \texttt{min\_size}` has an *average* cluster that cannot exist, and
    with every initial cluster too small the engine falls back to one cluster (:func:`_init_state`). The
    rule follows from the size rule itself (the start should be a partition the model can represent); see
    docs/decisions/ for the evidence.

    Parameters
    ----------
    n_clusters : int
        The requested initial clusters.
    n : int
        Points.
    min_size : float
        The deletion threshold.

    Examples
    --------
    >>> from ppclust.inference.hartigan import max_start_clusters
    >>> max_start_clusters(12, 200, 38.0), max_start_clusters(6, 150, 7.5)
    (5, 6)
    """
    return int(max(1, min(int(n_clusters), int(n // float(min_size)))))


def singular_data(x) -> bool:
    """Whether the data's own ML covariance is numerically singular (a constant feature, collinear or
    one-hot features, fewer points than dimensions): then every cluster's is, and CEC needs a ridge.

    Parameters
    ----------
    x : array (n, d)
        The data.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.hartigan import singular_data
    >>> singular_data(np.c_[np.arange(5.0), np.ones(5)])  # a constant feature
    True
    >>> singular_data(np.random.default_rng(0).normal(size=(10, 2)))
    False
    """
    x = np.asarray(x, np.float64)
    if x.shape[1] == 0:
        return False
    if x.shape[0] <= x.shape[1]:
        return True
    from ppclust.families import ML_SING_TOL

    ev = np.linalg.eigvalsh(np.atleast_2d(np.cov(x.T, bias=True)))
    return bool(ev[0] <= ML_SING_TOL * ev[-1])


def resolve_backend(backend: str) -> str:
    """``"auto"`` -> ``"numba"`` on a CPU default backend when numba imports, else ``"xla"``.

    Parameters
    ----------
    backend : {"auto", "numba", "xla"}
        The requested engine.

    Examples
    --------
    >>> from ppclust.inference.hartigan import resolve_backend
    >>> resolve_backend("xla")
    'xla'
    """
    from ppclust.inference import _hartigan_cpu

    if backend not in BACKENDS:
        raise ValueError(f"`backend` must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        return "numba" if _hartigan_cpu.available() and jax.default_backend() == "cpu" else "xla"
    if backend == "numba" and not _hartigan_cpu.available():
        raise ValueError("backend='numba' needs the numba package (pip install numba); use backend='xla'")
    return backend


# ---------------------------------------------------------------------------------------------
# initialisation
# ---------------------------------------------------------------------------------------------


#: k-means++ seed indices (one definition, :func:`ppclust.inference.init.kmeanspp_indices`): K distinct
#: points by D^2 sampling, the first uniform, as the authors' Java demo.
init_kmeanspp = kmeanspp_indices


def kmeanspp_partition(key: Array, x, K: int, backend: str = "auto") -> Array:
    """(n,) int32 partition of ``x`` by its nearest k-means++ seed, ``voronoi(x, init_kmeanspp(key, x, K))``
    (the Gibbs / TVClust start). With the compiled backend (``"auto"`` on CPU) by the numba twins from
    draws whose shape does not depend on n (:mod:`._init_cpu`; no program traced per data set, the same
    seeds as the JAX function), else as one jitted program.

    Parameters
    ----------
    key : JAX PRNG key
        Seeds the k-means++ draws.
    x : array (n, d)
        The data.
    K : int
        Seeds (clusters).
    backend : {"auto", "numba", "xla"}, default="auto"
        See :func:`resolve_backend`.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust.inference import cecib, hartigan
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 8.0])
    >>> with jax.enable_x64(True):
    ...     labels = hartigan.kmeanspp_partition(jax.random.key(0), jnp.asarray(x), 2)
    >>> sorted(np.bincount(np.asarray(labels)).tolist())
    [20, 20]
    """
    if resolve_backend(backend) == "numba":
        from ppclust.inference import _init_cpu

        x_np = np.array(x, np.float64)
        first, u = _kmeanspp_draws_one(key, np.int32(x_np.shape[0]), K=K, dtype="float64")
        return _put(_init_cpu.initial_labels(np.array(first)[None], np.array(u)[None], x_np, K)[0])
    return _kmeanspp_partition(key, x, K=K)


@partial(jax.jit, static_argnames=("K", "dtype"))
def _kmeanspp_draws_one(key, m, *, K, dtype):
    return kmeanspp_uniforms(key, K, m, dtype)


@partial(jax.jit, static_argnames=("K",))
def _kmeanspp_partition(key, x, *, K):
    return voronoi(x, init_kmeanspp(key, x, K))


def voronoi(x: Array, centre_idx: Array) -> Array:
    """Nearest seed (squared Euclidean distance, ties to the earlier seed) -> (n,) int32 labels.

    Parameters
    ----------
    x : array (n, d)
        The data.
    centre_idx : int array (K,)
        Indices of the seed points.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.inference.hartigan import voronoi
    >>> voronoi(jnp.array([[0.0], [1.0], [9.0]]), jnp.array([0, 2])).tolist()
    [0, 0, 1]
    """
    c = x[centre_idx]
    d2 = jnp.sum((x[:, None, :] - c[None, :, :]) ** 2, -1)
    return jnp.argmin(d2, axis=1).astype(jnp.int32)


def init_random(key: Array, n: int, K: int) -> Array:
    """Uniform random partition into K slots -> (n,) int32 labels.

    Parameters
    ----------
    key : JAX PRNG key
        Seeds the labels.
    n : int
        Points.
    K : int
        Slots.

    Examples
    --------
    >>> import jax
    >>> from ppclust.inference.hartigan import init_random
    >>> init_random(jax.random.key(0), 5, 3).shape
    (5,)
    """
    return jax.random.randint(key, (n,), 0, K, dtype=jnp.int32)


# ---------------------------------------------------------------------------------------------
# the engine
# ---------------------------------------------------------------------------------------------


def run(
    cost,
    x: Array,
    side,
    labels0: Array,
    *,
    K: int,
    min_size,
    max_passes: int = 100,
    reassign: str = "lazy",
    tol: float = 0.0,
    order: Array | None = None,
    backend: str = "auto",
) -> HartiganResult:
    """One Hartigan run from the partition ``labels0`` (int32, values in 0..K-1).

    Parameters
    ----------
    cost : CECCost
        The cost (:class:`ppclust.inference.cec.CECCost`).
    x : array (n, d)
        The data (float64).
    side : int32 array (n,) or None
        Label category of every point (-1: unlabelled), or None.
    labels0 : int32 array (n,)
        Initial slots.
    K : int
        Number of slots (static).
    min_size : float
        A cluster with fewer points is deleted (CEC-IB: :func:`ppclust.inference.cecib.min_size`).
    max_passes : int, default=100
        Safety cap on passes.
    reassign : {"lazy", "immediate"}, default="lazy"
        When a deleted cluster's points are reinserted (module docstring).
    tol : float, default=0.0
        A move needs ``Δ < -tol``.
    order : int array (n,) or None, default=None
        Visiting order of the points in every pass (None: data order 0..n-1).
    backend : {"auto", "numba", "xla"}, default="auto"
        ``"auto"``: the compiled CPU loop on a CPU backend, else XLA. Both take the same decisions
        (``tests/inference/test_hartigan_cpu.py``). ``"numba"`` needs concrete inputs (not under
        ``jit``/``vmap``).

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust.inference import cecib, hartigan
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 8.0])
    >>> with jax.enable_x64(True):
    ...     X = jnp.asarray(x)
    ...     res = hartigan.run(cecib.make_cost(X, 0), X, None, jnp.asarray(np.arange(40) % 2, jnp.int32), K=2,
    ...                        min_size=4.0)
    >>> sorted(np.bincount(np.asarray(res.labels)).tolist()), bool(res.converged)
    ([20, 20], True)
    """
    if reassign not in ("lazy", "immediate"):
        raise ValueError(f"reassign must be 'lazy' or 'immediate', got {reassign!r}")
    kw = dict(K=K, min_size=min_size, max_passes=max_passes, reassign=reassign, tol=tol)
    if resolve_backend(backend) == "numba":
        res = _run_cpu(cost, x, side, np.asarray(labels0)[None], order=order, **kw)
        return jax.tree_util.tree_map(lambda v: _put(np.asarray(v)[0]), res)
    if isinstance(x, jax.core.Tracer) or isinstance(labels0, jax.core.Tracer):  # under jit/vmap: as given
        return _run_xla(cost, x, side, labels0, order=order, **kw)
    n = x.shape[0]
    xp, sp, lp, valid = _padded(x, side, np.asarray(labels0)[None], K)
    order = np.arange(n) if order is None else np.asarray(order)
    order = _put(np.concatenate([order, np.arange(n, xp.shape[0])]), np.int32)
    res = _run_xla(cost, xp, sp, _put(lp[0]), order=order, n_valid=np.int32(n), **kw)
    return res._replace(labels=_put(np.asarray(res.labels)[:n]))


class HartiganInfo(NamedTuple):
    """Per-pass diagnostics of :func:`build`'s ``step``: total cost and active clusters after the pass's
    moves (before its end-of-pass degeneracy check).

    Parameters
    ----------
    cost : array ()
        Total cost.
    n_clusters : int32 array ()
        Active clusters.

    Examples
    --------
    >>> from ppclust.inference.hartigan import HartiganInfo
    >>> HartiganInfo._fields
    ('cost', 'n_clusters')
    """

    cost: Array
    n_clusters: Array


class HartiganAlgorithm(NamedTuple):
    """``init(labels0) -> state`` and ``step(key, state) -> (state, HartiganInfo)``, one pass over the data
    (BlackJAX's shape; the moves are deterministic, ``key`` is accepted for the common signature and not
    used). The state has ``labels``, ``active``, ``stats``, ``costs`` and ``moved`` (a move or a deletion in
    the last pass).

    Parameters
    ----------
    init : callable
        ``init(labels0) -> state``.
    step : callable
        ``step(key, state) -> (state, HartiganInfo)``.

    Examples
    --------
    >>> from ppclust.inference.hartigan import HartiganAlgorithm
    >>> HartiganAlgorithm._fields
    ('init', 'step')
    """

    init: Any
    step: Any


def build(
    cost,
    x: Array,
    side,
    *,
    K: int,
    min_size,
    reassign: str = "lazy",
    tol: float = 0.0,
    order: Array | None = None,
    n_valid=None,
) -> HartiganAlgorithm:
    """The XLA engine's ``init``/``step`` with the cost, data, side information and configuration closed
    over (arguments as :func:`run`).

    Parameters
    ----------
    cost : CECCost
        The cost.
    x : array (n, d)
        The data (float64).
    side : int32 array (n,) or None
        Label category of every point (-1: unlabelled), or None.
    K : int
        Number of slots (static).
    min_size : float
        A cluster with fewer points is deleted.
    reassign : {"lazy", "immediate"}, default="lazy"
        When a deleted cluster's points are reinserted.
    tol : float, default=0.0
        A move needs ``Δ < -tol``.
    order : int array (n,) or None, default=None
        Visiting order (None: data order).
    n_valid : int or traced int, default=None
        Rows visited per pass: the first ``n_valid`` entries of ``order``; the other rows are padding
        (label ``K`` in ``labels0``: in no slot's statistics, never visited or reassigned). None: all rows.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust.inference import cecib, hartigan
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 8.0])
    >>> with jax.enable_x64(True):
    ...     X = jnp.asarray(x)
    ...     side = jnp.full(40, -1, jnp.int32)  # no labels
    ...     alg = hartigan.build(cecib.make_cost(X, 0), X, side, K=2, min_size=4.0)
    ...     state, info = alg.step(None, alg.init(jnp.asarray(np.arange(40) % 2, jnp.int32)))
    >>> int(info.n_clusters)
    2
    """
    n = x.shape[0]
    order = jnp.arange(n, dtype=jnp.int32) if order is None else jnp.asarray(order, jnp.int32)
    n_visit = n if n_valid is None else n_valid

    def init(labels0) -> _State:
        labels0, stats, costs, active = _init_state(cost, x, side, labels0, K)
        state = _State(labels0, active, stats, costs, jnp.asarray(False))
        if reassign == "immediate":
            state = _reassign_all(cost, x, side, state, K)
        return state

    def point_step(t, st: _State) -> _State:
        st, small, a = _point_move(cost, x, side, st, order[t], K=K, min_size=min_size, tol=tol)
        if reassign == "immediate":
            st = lax.cond(small, lambda s: _reassign_cluster(cost, x, side, s, a, K), lambda s: s, st)
        return st

    def step(key, st: _State) -> tuple[_State, HartiganInfo]:
        del key  # deterministic moves
        st = lax.fori_loop(0, n_visit, point_step, st._replace(moved=jnp.asarray(False)))
        info = HartiganInfo(_energy(st), st.active.sum().astype(jnp.int32))
        degen = st.active & (cost.degenerate(st.stats) | ~jnp.isfinite(st.costs))
        degen = degen & (st.active.sum() > degen.sum())  # never delete every cluster
        st = st._replace(active=st.active & ~degen, moved=st.moved | jnp.any(degen))
        if reassign == "immediate":
            st = _reassign_all(cost, x, side, st, K)
        return st, info

    return HartiganAlgorithm(init, step)


def _point_move(cost, x, side, st: _State, i, *, K, min_size, tol):
    """Visit point ``i`` (the move rule of the module docstring): ``(state, small, a)``, ``small`` when its
    previous slot ``a`` was deactivated for falling below ``min_size`` (the caller reinserts its points
    with ``reassign="immediate"``)."""
    xi = x[i]
    si = jax.tree_util.tree_map(lambda v: v[i], side)
    a = st.labels[i]
    orphan = ~st.active[a]
    add_c = cost.cost_add(st.stats, xi, si)
    removed = cost.remove(st.stats, a, xi, si)
    rem_c = cost.cost_slot(removed, a)
    d_add = add_c - st.costs
    delta = jnp.where(orphan, d_add, (rem_c - st.costs[a]) + d_add)
    delta = jnp.where(jnp.isfinite(delta), delta, _BIG)
    cand = st.active & (jnp.arange(K) != a)
    delta = jnp.where(cand, delta, jnp.inf)
    b = jnp.argmin(delta).astype(jnp.int32)
    move = delta[b] < jnp.where(orphan, jnp.inf, -tol)

    def do_move(st: _State) -> _State:
        base = jax.tree_util.tree_map(lambda u, v: jnp.where(orphan, u, v), st.stats, removed)
        costs = jnp.where(orphan, st.costs, st.costs.at[a].set(rem_c)).at[b].set(add_c[b])
        return _State(st.labels.at[i].set(b), st.active, cost.add(base, b, xi, si), costs, jnp.asarray(True))

    st = lax.cond(move, do_move, lambda s: s, st)
    n_act = st.active.sum()
    small = (~orphan) & st.active[a] & (cost.count(st.stats)[a] < min_size) & (n_act > 1)
    return st._replace(active=st.active.at[a].set(st.active[a] & ~small)), small, a


@partial(jax.jit, static_argnames=("K", "max_passes", "reassign"))
def _run_xla(
    cost,
    x: Array,
    side,
    labels0: Array,
    *,
    K: int,
    min_size,
    max_passes: int = 100,
    reassign: str = "lazy",
    tol: float = 0.0,
    order: Array | None = None,
    n_valid=None,
) -> HartiganResult:
    """The engine as one XLA program (accelerators; ``vmap``/``jit``-able): a ``while_loop`` over
    :func:`build`'s passes. See :func:`run`; ``n_valid``: see :func:`build`."""
    alg = build(
        cost, x, side, K=K, min_size=min_size, reassign=reassign, tol=tol, order=order, n_valid=n_valid
    )
    state = alg.init(labels0)
    energy0 = _energy(state)
    trace = jnp.full(max_passes + 1, jnp.nan, x.dtype).at[0].set(energy0)
    ktrace = jnp.zeros(max_passes + 1, jnp.int32).at[0].set(state.active.sum().astype(jnp.int32))

    def pass_body(carry):
        st, p, trace, ktrace = carry
        st, info = alg.step(None, st)
        return st, p + 1, trace.at[p + 1].set(info.cost), ktrace.at[p + 1].set(info.n_clusters)

    def pass_cond(carry):
        st, p, _, _ = carry
        return (p == 0) | (st.moved & (p < max_passes))

    st, p, trace, ktrace = lax.while_loop(pass_cond, pass_body, (state, jnp.int32(0), trace, ktrace))
    converged = ~st.moved
    st = _reassign_all(cost, x, side, st, K)  # orphans left when max_passes stopped a run after a deletion
    return HartiganResult(st.labels, st.active, st.stats, st.costs, _energy(st), p, converged, trace, ktrace)


class HartiganConfig(NamedTuple):
    """The options of the restarts of :func:`fit` and :func:`fit_batch`, a frozen value.

    Parameters
    ----------
    n_init : int, default=10
        Restarts, each from its own initial partition.
    init : {"k-means++", "random", "labels"}, default="k-means++"
        Initial partitions (module docstring); ``"labels"`` needs the ``centres`` of :func:`fit`.
    max_passes : int, default=100
        Most Hartigan passes of each restart (:func:`fit`) or of the polish (:func:`fit_batch`).
    reassign : {"lazy", "immediate"}, default="lazy"
        When a deleted cluster's points are reinserted (module docstring).
    tol : float, default=0.0
        A move needs ``Δ < -tol`` (:func:`fit` only).
    backend : {"auto", "numba", "xla"}, default="auto"
        The Hartigan engine (:func:`run`).
    max_iter : int, default=100
        Most batch steps per restart (:func:`fit_batch` only).
    polish : bool, default=True
        Hartigan passes from the best batch partition (:func:`fit_batch` only).

    Examples
    --------
    >>> HartiganConfig(n_init=3).with_options(reassign="immediate").reassign
    'immediate'
    """

    n_init: int = 10
    init: str = "k-means++"
    max_passes: int = 100
    reassign: str = "lazy"
    tol: float = 0.0
    backend: str = "auto"
    max_iter: int = 100
    polish: bool = True

    def with_options(self, **options) -> HartiganConfig:
        """This configuration with some fields replaced (an unknown name is a TypeError).

        Parameters
        ----------
        **options
            Fields of :class:`HartiganConfig`.

        Returns
        -------
        HartiganConfig

        Examples
        --------
        >>> HartiganConfig().with_options(n_init=2).n_init
        2
        """
        unknown = set(options) - set(self._fields)
        if unknown:
            raise TypeError(
                f"unknown option(s) {sorted(unknown)}; the options are the fields of HartiganConfig"
            )
        return self._replace(**options)

    def check_unused(self, names, who: str) -> None:
        """ValueError naming the first of ``names`` set away from its default (``who`` does not read it).

        Parameters
        ----------
        names : tuple of str
            Fields ``who`` does not read.
        who : str
            The solver, for the message.

        Examples
        --------
        >>> HartiganConfig().check_unused(("tol",), "fit_batch") is None
        True
        """
        for name in names:
            if getattr(self, name) != self._field_defaults[name]:
                raise ValueError(f"{who} does not use {name} (set to {getattr(self, name)!r})")


def _config(config, options) -> HartiganConfig:
    return (HartiganConfig() if config is None else config).with_options(**options)


def fit(
    key: Array,
    cost,
    x: Array,
    side,
    config: HartiganConfig | None = None,
    *,
    K: int,
    min_size,
    devices="auto",
    centres=None,
    **options,
) -> HartiganFit:
    """``n_init`` restarts; returns a :class:`HartiganFit` ``(best, costs, n_passes, n_clusters)``.

    ``best`` is the :class:`HartiganResult` of the first restart with the lowest final cost (a later
    restart replaces the best only if strictly lower, as in the jar).

    Parameters
    ----------
    key : JAX PRNG key
        Seeds the initial partitions (one key per restart).
    cost : CECCost
        The cost (:func:`ppclust.inference.cecib.make_cost`, :func:`ppclust.inference.c3l.make_cost`).
    x : array (n, d)
        The data (float64).
    side : int32 array (n,) or None
        Label category of every point (-1: unlabelled), or None.
    config : HartiganConfig or None, default=None
        The options; None: the defaults. ``max_iter`` and ``polish`` are not read.
    K : int
        Slots (initial clusters).
    min_size : float
        A cluster with fewer points is deleted.
    devices : "auto", None or int, default="auto"
        ``"auto"``: with several local devices and ``n_init`` a multiple of their number, the restart axis
        is sharded over them (one jitted program, each restart on its device); ``None``/``1``: one
        device; an int ``m``: the first ``m`` local devices. Results are identical either way (same key
        per restart). See :func:`ppclust._devices.axis_sharding`.
    centres : array (m, d) or None, default=None
        With ``init="labels"`` (and only then): m <= K fixed initial centres (the labelled classes'
        means); each restart starts from :func:`seeded_partitions` (the remaining K - m centres drawn per
        restart).
    **options
        Fields of :class:`HartiganConfig` replacing those of ``config``. ``backend="numba"`` draws the
        initial partitions by the same jitted code and runs all restarts in one compiled call (on one
        core); ``"auto"`` takes the XLA engine when ``devices`` spreads the restarts over several devices.

    Returns
    -------
    HartiganFit

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust.inference import cecib, hartigan
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 8.0])
    >>> with jax.enable_x64(True):
    ...     X = jnp.asarray(x)
    ...     out = hartigan.fit(jax.random.key(0), cecib.make_cost(X, 0), X, None, K=2, min_size=4.0, n_init=2)
    >>> out.costs.shape, int(out.best.active.sum())
    ((2,), 2)
    """
    config = _config(config, options)
    config.check_unused(("max_iter", "polish"), "hartigan.fit")
    n_init, init, max_passes, reassign = config.n_init, config.init, config.max_passes, config.reassign
    tol, backend = config.tol, config.backend
    _check_init(init, centres)
    if reassign not in ("lazy", "immediate"):
        raise ValueError(f"reassign must be 'lazy' or 'immediate', got {reassign!r}")
    sharding = axis_sharding(n_init, devices, "restarts", "n_init")
    # "auto" runs the compiled loop on CPU unless the restarts are spread over several devices
    compiled = resolve_backend(backend) == "numba" and (sharding is None or backend == "numba")
    labels0 = None
    if init == "labels":
        labels0 = seeded_partitions(key, x, centres, K, n_init)
    elif compiled:
        labels0 = _compiled_initial_labels(key, x, K=K, n_init=n_init, init=init)
    kw = dict(K=K, min_size=min_size, max_passes=max_passes, reassign=reassign, tol=tol)
    if compiled:
        return _pick_best_host(_run_cpu(cost, x, side, labels0, order=None, **kw))
    xp, sp, labels0, n_valid = _padded(x, side, labels0, K)
    if init == "labels":
        labels0 = _put(labels0)
        if sharding is not None:
            labels0 = jax.device_put(labels0, sharding)
        fitted = _fit_from(cost, xp, sp, labels0, sharding=sharding, n_valid=n_valid, **kw)
    else:
        fitted = _fit(
            key,
            cost,
            xp,
            sp,
            K=K,
            n_init=n_init,
            init=init,
            max_passes=max_passes,
            reassign=reassign,
            limits=(min_size, tol),
            sharding=sharding,
            n_valid=n_valid,
        )
    return _unpad(fitted, x.shape[0])


def _compiled_initial_labels(key, x, *, K, n_init, init) -> np.ndarray:
    """(n_init, n) host starts of the compiled engine for ``init`` "k-means++" or "random", from the XLA
    engine's seeds. The set-up is compiled (numba) for any n: k-means++ from draws whose shape does not
    depend on n, initial statistics in :func:`_run_cpu`; only ``init="random"`` draws per point, jitted on
    n padded to a size bucket (the labels of the real rows do not depend on it)."""
    n = x.shape[0]
    if init == "k-means++":
        from ppclust.inference import _init_cpu

        first, u = _kmeanspp_draws(key, np.int32(n), K=K, n_init=n_init, dtype=np.dtype(x.dtype).name)
        return _init_cpu.initial_labels(np.array(first), np.array(u), np.array(x, np.float64), K)
    xp, _, _, n_valid = _padded(x, None, None, K)
    return np.asarray(
        _initial_labels(key, xp, K=K, n_init=n_init, init=init, sharding=None, n_valid=n_valid)
    )[:, :n]


def _padded(x, side, labels0, K, size=None):
    """The XLA engines' inputs with the rows padded up to ``size`` (default
    :func:`ppclust._buckets.bucket_size`: one program per bucket): ``(x, side, labels0, n_valid)``;
    padding rows are zero, of side -1 and label K (in no slot, never visited). ``labels0`` (R, >= n) is
    cut to its first n columns and padded on the host (None stays None)."""
    n = x.shape[0]
    nb = bucket_size(n) if size is None else size
    xp = _put(pad_rows(np.asarray(x), nb)[0])
    sp = None if side is None else _put(pad_vector(np.asarray(side, np.int32), nb, -1))
    if labels0 is not None:
        labels0 = _pad_labels(labels0, n, nb, K)
    return xp, sp, labels0, np.int32(n)


def _batch_result(labels, active, stats, costs, res, b) -> HartiganResult:
    """Restart ``b`` of a batch run (``res``) as the fit's result when no Hartigan polish follows: its
    labels (on the device), slots, statistics and per-slot costs, with the batch run's counters."""
    return HartiganResult(
        labels,
        _put(active),
        jax.tree_util.tree_map(_put, stats),
        _put(costs),
        _put(np.sum(np.where(active, costs, 0.0))),
        _put(res.n_iter[b]),
        _put(res.converged[b]),
        _put(np.full(1, res.cost[b])),
        _put(np.full(1, active.sum(), np.int32)),
    )


def _pad_labels(labels, n: int, size: int, K: int) -> np.ndarray:
    """Host (R, size) int32 labels: the first n columns of ``labels``, then label K (in no slot)."""
    return np.pad(np.asarray(labels, np.int32)[:, :n], ((0, 0), (0, size - n)), constant_values=K)


def _unpad(fitted: HartiganFit, n: int) -> HartiganFit:
    """The fit's labels without the padding rows (sliced on the host: no program per n)."""
    return fitted._replace(best=fitted.best._replace(labels=_put(np.asarray(fitted.best.labels)[:n])))


def _check_init(init, centres):
    if init not in ("k-means++", "random", "labels"):
        raise ValueError(f"init must be 'k-means++', 'random' or 'labels', got {init!r}")
    if (init == "labels") != (centres is not None):
        raise ValueError("init='labels' needs centres, and centres are only used with init='labels'")


def seeded_partitions(key: Array, x, centres, K: int, n_init: int) -> np.ndarray:
    """(n_init, n) int32 initial partitions of ``init="labels"``.

    The m rows of ``centres`` (m <= K; e.g. the means of the labelled points of each label category) are
    the first m centres of every restart; the other K - m are drawn by k-means++ D^2 sampling given them
    (:func:`ppclust.inference.init.kmeanspp_from_uniforms` with those rows fixed, through its compiled twin,
    from the draws :func:`_kmeanspp_draws` makes for ``init="k-means++"``: any n without a new program);
    every point goes to its nearest centre (squared Euclidean, expanded form, the earlier centre on ties),
    in blocks of rows: no (n, K) array.
    With m = K every restart starts from the same partition.

    Parameters
    ----------
    key : JAX PRNG key
        Seeds the k-means++ draws of the free centres.
    x : array (n, d)
        The data.
    centres : array (m, d)
        The fixed centres, m <= K.
    K : int
        Centres in all.
    n_init : int
        Restarts (partitions).

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust.inference import cecib, hartigan
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 8.0])
    >>> hartigan.seeded_partitions(jax.random.key(0), x, x[[0, 39]], 2, 3).shape
    (3, 40)
    """
    from ppclust.inference import _init_cpu

    x_np = np.array(x, np.float64)
    c = np.atleast_2d(np.asarray(centres, np.float64))
    n, d = x_np.shape
    m = c.shape[0]
    if not 1 <= m <= K or c.shape[1] != d:
        raise ValueError(f"centres must be (m, {d}) with 1 <= m <= K = {K}, got {c.shape}")
    c0 = np.zeros((K, d))
    c0[:m] = c
    fixed = np.arange(K) < m
    first, u = _kmeanspp_draws(key, np.int32(n), K=K, n_init=n_init, dtype="float64")
    first, u = np.array(first), np.array(u)
    sq = np.einsum("ij,ij->i", x_np, x_np)
    out = np.empty((n_init, n), np.int32)
    for r in range(n_init):
        _, cs = _init_cpu.kmeanspp_from_uniforms(first[r], u[r], x_np, c0, fixed, n)
        out[r] = _nearest_centres(x_np, sq, cs)
    return out


def _nearest_centres(x: np.ndarray, sq: np.ndarray, cs: np.ndarray) -> np.ndarray:
    """(n,) int32 nearest centre of every row of ``x`` (n, d) among ``cs`` (K, d) by the expanded squared
    distance ``sq - 2 x c + |c|^2`` (``sq`` the rows' squared norms), the earlier centre on ties, in blocks
    of rows whose (rows, K) and (rows, d) temporaries hold at most 2^20 values: no (n, K) array."""
    n, d = x.shape
    out = np.empty(n, np.int32)
    rows = max(1, (1 << 20) // max(cs.shape[0], d, 1))
    cc = np.einsum("ij,ij->i", cs, cs)[None]
    for a in range(0, n, rows):
        d2 = sq[a : a + rows, None] - (2.0 * x[a : a + rows]) @ cs.T + cc
        out[a : a + rows] = np.argmin(d2, axis=1)
    return out


def _kmeanspp_draws(key, m, *, K, n_init, dtype):
    """The k-means++ draws of ``n_init`` restarts among ``m`` points, host arrays ``first`` (n_init,) and
    ``u`` (n_init, K), as :func:`_initial_labels` draws them: one program for every n (``m`` traced) and
    for every ``n_init`` of a :func:`ppclust._buckets.split_count` (the restart keys a prefix of its
    split)."""
    first, u = _kmeanspp_draws_program(key, m, K=K, n_init=split_count(n_init), dtype=dtype)
    return np.asarray(first)[:n_init], np.asarray(u)[:n_init]


@partial(jax.jit, static_argnames=("K", "n_init", "dtype"))
def _kmeanspp_draws_program(key, m, *, K, n_init, dtype):
    return jax.vmap(lambda k: kmeanspp_uniforms(k, K, m, dtype))(jax.random.split(key, n_init))


@partial(jax.jit, static_argnames=("K", "n_init", "init", "sharding"))
def _initial_labels(key, x, *, K, n_init, init, sharding, n_valid=None):
    """(n_init, n) initial partitions; with ``n_valid`` the rows from ``n_valid`` on are padding (their
    labels are meaningless; random labels of the real rows do not depend on the padding)."""
    keys = jax.random.split(key, n_init)
    n = x.shape[0]
    if sharding is not None:  # restart axis over the "restarts" mesh; propagates into the vmapped runs
        keys = lax.with_sharding_constraint(keys, sharding)
    if init == "k-means++":
        labels0 = jax.vmap(lambda k: voronoi(x, init_kmeanspp(k, x, K, n_valid)))(keys)
    else:
        labels0 = jax.vmap(lambda k: init_random(k, n, K))(keys)
    if n_valid is not None:  # padding rows: label K (in no slot)
        labels0 = jnp.where(jnp.arange(n) < n_valid, labels0, K)
    if sharding is not None:
        labels0 = lax.with_sharding_constraint(labels0, sharding)
    return labels0


def _pick_best_host(res: HartiganResult) -> HartiganFit:
    """:func:`_pick_best` on the host (no program compiled per n) for the compiled engine's results."""
    c = np.asarray(res.cost)
    best = int(np.argmin(np.where(np.isfinite(c), c, np.inf)))
    best_res = jax.tree_util.tree_map(lambda v: _put(np.asarray(v)[best]), res)
    n_clusters = _put(np.asarray(res.active).sum(-1), np.int32)
    return HartiganFit(best_res, res.cost, res.n_passes, n_clusters)


@jax.jit
def _pick_best(res: HartiganResult) -> HartiganFit:
    c = jnp.where(jnp.isfinite(res.cost), res.cost, jnp.inf)
    best = jnp.argmin(c)
    best_res = jax.tree_util.tree_map(lambda v: v[best], res)
    return HartiganFit(best_res, res.cost, res.n_passes, res.active.sum(-1).astype(jnp.int32))


@partial(jax.jit, static_argnames=("K", "n_init", "init", "max_passes", "reassign", "sharding"))
def _fit(key, cost, x, side, *, K, n_init, init, max_passes, reassign, limits, sharding, n_valid=None):
    """One program: the starts and the best of the runs; ``limits = (min_size, tol)`` (traced)."""
    min_size, tol = limits
    labels0 = _initial_labels(key, x, K=K, n_init=n_init, init=init, sharding=sharding, n_valid=n_valid)
    return _runs_best(
        cost,
        x,
        side,
        labels0,
        K=K,
        min_size=min_size,
        max_passes=max_passes,
        reassign=reassign,
        tol=tol,
        sharding=sharding,
        n_valid=n_valid,
    )


def _runs_best(cost, x, side, labels0, *, K, min_size, max_passes, reassign, tol, sharding, n_valid=None):
    res = jax.vmap(
        lambda l0: _run_xla(
            cost,
            x,
            side,
            l0,
            K=K,
            min_size=min_size,
            max_passes=max_passes,
            reassign=reassign,
            tol=tol,
            n_valid=n_valid,
        )
    )(labels0)
    if sharding is not None:
        res = jax.tree_util.tree_map(lambda v: lax.with_sharding_constraint(v, sharding), res)
    return _pick_best(res)


#: the XLA restarts from given initial partitions (n_init, n) (``init="labels"``)
_fit_from = partial(jax.jit, static_argnames=("K", "max_passes", "reassign", "sharding"))(_runs_best)


def _cpu_inputs(cost, x, side, order, *, min_size, tol, max_passes, reassign):
    """The compiled engine's ``(Data, Config)`` (:mod:`._hartigan_cpu`) for a cost and its data."""
    from ppclust.inference import _hartigan_cpu as cpu

    def own(a, dtype=np.float64):
        return np.array(a, dtype=dtype, order="C", copy=True)

    n = np.shape(x)[0]
    # a writable copy of x: one numba signature whether x came from JAX (read-only) or NumPy
    data = cpu.Data(
        own(x),
        np.full(n, -1, np.int32) if side is None else own(side, np.int32),
        np.arange(n, dtype=np.int64) if order is None else own(order, np.int64),
        own(np.atleast_1d(np.asarray(cost.p))),
        own(np.atleast_1d(np.asarray(cost.var_floor))),
        np.zeros(n + 2),
    )
    cfg = cpu.Config(
        float(cost.n_total),
        float(cost.beta) if cost.n_labels > 0 else 0.0,
        float(min_size),
        float(tol),
        float(cost.min_count),
        float(SING_TOL),
        int(cpu.BLOCK),
        int(max_passes),
        reassign == "immediate",
    )
    return data, cfg


def _run_cpu(
    cost, x, side, labels0, *, K, min_size, max_passes, reassign, tol, order, _kernel_args: list | None = None
) -> HartiganResult:
    """The compiled engine for R initial partitions ``labels0`` (R, n): initial statistics,
    costs and live slots by :func:`._init_cpu.init_states` (the compiled twin of :func:`_init_states`, any n
    without a new program), then :func:`._hartigan_cpu.run_restarts`, then back to pytrees.
    ``_kernel_args``: a list that receives copies of ``run_restarts``'s arguments (to time the loop alone)."""
    from ppclust.inference import _hartigan_cpu as cpu
    from ppclust.inference import _init_cpu

    R, n = np.shape(labels0)
    data, cfg = _cpu_inputs(
        cost, x, side, order, min_size=min_size, tol=tol, max_passes=max_passes, reassign=reassign
    )
    J = cost.n_dec
    d = data.x.shape[1] - J
    m = cost.n_labels
    # the compiled loop takes slots in tiles: K padded to Kp with dead slots (identity factor, count 1)
    Kp = -(-K // cpu.TILE) * cpu.TILE
    state = cpu.Slots(
        np.array(labels0, np.int32, order="C", copy=True),
        np.zeros((R, Kp), np.bool_),
        np.zeros((R, Kp)),
        np.zeros((R, d, Kp)),
        np.zeros((R, d, d, Kp)),
        np.zeros((R, Kp, J)),
        np.zeros((R, Kp, J)),
        np.zeros((R, Kp, m)),
        np.zeros((R, Kp)),
        np.zeros((R, Kp)),
        np.zeros((R, Kp)),
    )
    _init_cpu.init_states(data, cfg, state, K, float(cost.ridge))
    # singular initial slots are dead (the loop gives them identity)
    state = state._replace(L=np.where(np.isfinite(state.L), state.L, 0.0))
    out = cpu.Trace(
        np.full((R, max_passes + 1), np.nan),
        np.zeros((R, max_passes + 1), np.int32),
        np.zeros(R, np.int32),
        np.zeros(R, np.bool_),
    )
    if _kernel_args is not None:
        _kernel_args.append(
            tuple(
                type(t)(*(a.copy() if isinstance(a, np.ndarray) else a for a in t))
                for t in (data, cfg, state, out)
            )
        )
    for r in range(R):  # one restart per call: a stop request is honoured between restarts
        _progress.check()
        cpu.run_restarts(data, cfg, *(type(t)(*(a[r : r + 1] for a in t)) for t in (state, out)))
    stats = CECStats(
        *(
            _put(v)
            for v in (
                state.n[:, :K],
                np.swapaxes(state.sT, 1, 2)[:, :K],
                state.L.transpose(0, 3, 1, 2)[:, :K],
                state.tmean[:, :K],
                state.tm2[:, :K],
                state.counts[:, :K],
                state.nlab[:, :K],
                state.clogc[:, :K],
            )
        )
    )
    act, cst = state.active[:, :K], state.costs[:, :K]
    energy = _put(np.sum(np.where(act, cst, 0.0), -1))
    return HartiganResult(
        _put(state.labels),
        _put(act),
        stats,
        _put(cst),
        energy,
        _put(out.n_passes),
        _put(out.converged),
        _put(out.trace, data.x.dtype),
        _put(out.ktrace),
    )


def _put(a, dtype=None):
    """A host array on the default device without a compiled copy (``jnp.asarray`` of a NumPy array
    compiles a small program per new shape)."""
    return jax.device_put(np.asarray(a, dtype))


@partial(jax.jit, static_argnames=("K",))
def _init_states(cost, x, side, labels0, *, K):
    """Initial statistics, costs and live slots of every restart (as the XLA engine starts)."""

    return jax.vmap(lambda l0: _init_state(cost, x, side, l0, K))(labels0)


def _init_state(cost, x, side, labels0, K):
    """Statistics, costs and live slots of the initial partition (shared by both engines).

    A slot is live when it is non-empty, not degenerate and of finite cost. When no slot is live (every
    initial cluster too small or singular, e.g. ``K`` close to n or singular data) all points start in
    slot 0, which is kept live whatever its cost: the engine always holds at least one cluster and
    assigns every point.
    """
    labels0 = labels0.astype(jnp.int32)
    stats = cost.stats(x, side, labels0, K)
    costs = cost.cost(stats)
    active = (cost.count(stats) > 0) & ~cost.degenerate(stats) & jnp.isfinite(costs)

    def one_cluster(_):
        # label K marks a padding row (see bucket): it stays in no cluster
        lab = jnp.where(labels0 < K, 0, K).astype(labels0.dtype)
        st = cost.stats(x, side, lab, K)
        return lab, st, cost.cost(st), jnp.arange(K) == 0

    return lax.cond(jnp.any(active), lambda _: (labels0, stats, costs, active), one_cluster, None)


# --- helpers ---------------------------------------------------------------------------------


def _energy(st: _State) -> Array:
    return jnp.sum(jnp.where(st.active, st.costs, 0.0))


def _insert(cost, x, side, st: _State, i, K) -> _State:
    """Insert point i (currently in no live cluster) where the insertion cost is smallest."""
    xi = x[i]
    si = jax.tree_util.tree_map(lambda v: v[i], side)
    add_c = cost.cost_add(st.stats, xi, si)
    delta = add_c - st.costs
    delta = jnp.where(jnp.isfinite(delta), delta, _BIG)
    delta = jnp.where(st.active, delta, jnp.inf)
    b = jnp.argmin(delta).astype(jnp.int32)
    return _State(
        st.labels.at[i].set(b),
        st.active,
        cost.add(st.stats, b, xi, si),
        st.costs.at[b].set(add_c[b]),
        jnp.asarray(True),
    )


def _reassign_cluster(cost, x, side, st: _State, a, K) -> _State:
    """Immediately reinsert the points of dead slot ``a`` one at a time in index order."""

    # ``~active[a]`` matters under vmap, where lax.cond runs this branch for live slots too.
    def cond(s):
        return ~s.active[a] & jnp.any(s.labels == a) & jnp.any(s.active)

    def body(s):
        i = jnp.argmax(s.labels == a)
        return _insert(cost, x, side, s, i, K)

    return lax.while_loop(cond, body, st)


def _reassign_all(cost, x, side, st: _State, K) -> _State:
    """Reinsert every orphan (point whose slot is dead), in index order."""

    def orphans(s):  # label K (a padding row) is in no slot and never an orphan
        return (s.labels < K) & ~s.active[jnp.minimum(s.labels, K - 1)]

    def cond(s):
        return jnp.any(orphans(s)) & jnp.any(s.active)

    def body(s):
        i = jnp.argmax(orphans(s))
        return _insert(cost, x, side, s, i, K)

    return lax.while_loop(cond, body, st)


# ---------------------------------------------------------------------------------------------
# batch (Lloyd-type) cross-entropy clustering for large n
# ---------------------------------------------------------------------------------------------


class BatchResult(NamedTuple):
    """Outcome of batch CEC restarts (:func:`fit_batch`), one entry per restart.

    Parameters
    ----------
    labels : int32 array (n_init, n)
        Slots.
    active : bool array (n_init, K)
        Live slots.
    cost : array (n_init,)
        Total cost E(Y) of the final partition (the same objective as the Hartigan engine).
    n_iter : int32 array (n_init,)
        Assignment steps.
    converged : bool array (n_init,)
        No label changed in the last step.

    Examples
    --------
    >>> from ppclust.inference.hartigan import BatchResult
    >>> BatchResult._fields
    ('labels', 'active', 'cost', 'n_iter', 'converged')
    """

    labels: Array
    active: Array
    cost: Array
    n_iter: Array
    converged: Array


def assignment_costs(cost, x: Array, side, stats, active: Array, chunk: int = 1024) -> Array:
    r"""(n, K) cost of giving each point to each live slot, all at once (the CEC rule, Tabor & Spurek 2014):

    .. math:: c_{ik} = -\ln p_k - \ln\mathcal N(x_i;\mu_k,\Sigma_k) - \sum_{j<J}\ln\mathcal N(t_{ij}; m_{kj},
              \sigma_{kj}^2) + \beta\,\big[(n_k+1)H(c_k+e_{z_i}) - n_k H(c_k)\big]

    with :math:`\Sigma_k` the ML covariance of the Gaussian part (scatter + ridge over :math:`n_k`),
    :math:`(m_{kj},\sigma_{kj})` C3L's leakage-constrained 1-D fits (Theorem 1), and the label term the
    exact change of :math:`n\cdot p_k H(Z\mid Y_k\cap X_l)` (CEC-IB eq. 10) when point i, of category
    :math:`z_i`, joins slot k (:math:`\beta H_k` for an unlabelled point). Summed over points, the first two
    terms are n times the CEC cross-entropy of the partition. Dead slots cost +inf.

    The Mahalanobis terms are one GEMM per chunk of ``chunk`` points: :math:`w_{ik} = L_k^{-1}(x_i-\mu_k)`
    for all K slots at once as ``(x - g) @ [L_1^{-T} ... L_K^{-T}] - (mu_k - g) L_k^{-T}`` (g the data mean,
    so no cancellation), BLAS-shaped on any device.

    Parameters
    ----------
    cost : CECCost
        The cost.
    x : array (n, d)
        The data.
    side : int32 array (n,) or None
        Label category of every point (-1: unlabelled).
    stats : CECStats
        The slots' statistics.
    active : bool array (K,)
        Live slots.
    chunk : int, default=1024
        Points per GEMM.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust.inference import cecib, hartigan
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 8.0])
    >>> with jax.enable_x64(True):
    ...     X = jnp.asarray(x)
    ...     cost = cecib.make_cost(X, 0)
    ...     labels = jnp.asarray(np.arange(40) >= 20, jnp.int32)
    ...     side = jnp.full(40, -1, jnp.int32)  # no labels
    ...     c = hartigan.assignment_costs(cost, X, side, cost.stats(X, side, labels, 2), jnp.ones(2, bool))
    >>> c.shape, bool((np.argmin(np.asarray(c), 1) == np.asarray(labels)).all())
    ((40, 2), True)
    """
    return _assignment_costs(stats, cost, x, side, active, chunk)


def _assignment_costs(cs: CECStats, cost: CECCost, x: Array, side, active: Array, chunk: int) -> Array:
    """:func:`assignment_costs` from the statistics in the compiled engine's layout, one chunk of ``chunk``
    rows at a time (:func:`_cost_rows`)."""
    rows = _cost_rows(cs, cost, x.dtype, active)
    b = min(chunk, x.shape[0])
    xp, sp = _chunked(x, side, b)
    blocks = (xp.reshape(-1, b, xp.shape[1]), sp.reshape(-1, b))
    return lax.map(lambda a: rows(*a), blocks).reshape(-1, cs.n.shape[0])[: x.shape[0]]


def _assign(cs: CECStats, cost: CECCost, x: Array, side, active: Array, chunk: int, n_rows) -> Array:
    """The slot of smallest :func:`assignment_costs` of every row (int32, ties to the first), one chunk of
    ``chunk`` rows at a time: no (n, K) matrix. Rows after the chunks holding the first ``n_rows``
    (bucket padding) get ``K``."""
    rows = _cost_rows(cs, cost, x.dtype, active)
    K = cs.n.shape[0]
    n = x.shape[0]
    b = min(chunk, n)
    xp, sp = _chunked(x, side, b)

    def one_chunk(j, acc):
        xb, sb = lax.dynamic_slice_in_dim(xp, j * b, b), lax.dynamic_slice_in_dim(sp, j * b, b)
        return lax.dynamic_update_slice_in_dim(acc, jnp.argmin(rows(xb, sb), 1).astype(jnp.int32), j * b, 0)

    return lax.fori_loop(0, (n_rows + b - 1) // b, one_chunk, jnp.full(xp.shape[0], K, jnp.int32))[:n]


def _chunked(x, side, b):
    """``x`` and the label categories (-1 where ``side`` is None) padded to a multiple of ``b`` rows."""
    pad = (-x.shape[0]) % b
    sp = jnp.full(x.shape[0], -1, jnp.int32) if side is None else jnp.asarray(side, jnp.int32)
    return jnp.pad(x, ((0, pad), (0, 0))), jnp.pad(sp, (0, pad), constant_values=-1)


def _cost_rows(cs: CECStats, cost: CECCost, dtype, active: Array):
    """The slots' constant terms, and ``rows(xb, cat) -> (b, K)``: the costs of a block of points ``xb``
    (b, J + d) of label categories ``cat`` (b,) (dead slots +inf)."""
    from ppclust.families import gaussian_log_normaliser_chol

    n_total = cost.n_total
    K = cs.n.shape[0]
    J = cs.t_mean.shape[1]
    d = cs.s.shape[1]
    nk = jnp.maximum(cs.n, 1.0)
    base = jnp.log(n_total) - jnp.log(nk)  # -ln p_k
    if d > 0:
        mu = cs.s / nk[:, None]
        L = cs.scale / jnp.sqrt(nk)[:, None, None]  # Cholesky of the covariance
        L = jnp.where(active[:, None, None], L, jnp.eye(d, dtype=dtype))
        base = base + gaussian_log_normaliser_chol(L)
        eye = jnp.eye(d, dtype=dtype)
        Linv = jax.vmap(lambda Lk: jax.scipy.linalg.solve_triangular(Lk, eye, lower=True))(L)  # (K, d, d)
        g = cs.s.sum(0) / jnp.maximum(cs.n.sum(), 1.0)  # a shift independent of how rows are split
        M = jnp.transpose(Linv, (2, 0, 1)).reshape(d, K * d)  # column block k = L_k^{-T}
        off = jnp.einsum("kc,kec->ke", mu - g[None], Linv)
    if J > 0:
        s2 = jnp.maximum(cs.t_m2 / nk[:, None], jnp.asarray(cost.var_floor, dtype))
        m, sig, _, _ = constrained_fit_1d(cs.t_mean, s2, jnp.asarray(cost.p, dtype))
        base = base + jnp.sum(gaussian_log_normaliser_chol(sig[..., None, None]), -1)  # 1-D factors sigma
    table = None
    if cs.counts.shape[1] > 0:
        from jax.scipy.special import xlogy

        def h(n_lab, clogc):
            safe = jnp.maximum(n_lab, 1.0)
            return jnp.where(n_lab > 0, jnp.log(safe) - clogc / safe, 0.0)

        # the term depends on the point only through its category: a (K, m + 1) table, then a gather
        hk = h(cs.n_lab, cs.clogc)  # (K,)
        c = cs.counts  # (K, m) c_kj
        h_new = h(cs.n_lab[:, None] + 1.0, cs.clogc[:, None] - xlogy(c, c) + xlogy(c + 1.0, c + 1.0))
        table = jnp.concatenate([(cs.n[:, None] + 1.0) * h_new - cs.n[:, None] * hk[:, None], hk[:, None]], 1)

    def rows(xb, cat):
        tot = jnp.zeros((xb.shape[0], K), dtype)
        if d > 0:
            w = ((xb[:, J:] - g[None]) @ M).reshape(xb.shape[0], K, d) - off[None]
            tot = tot + 0.5 * jnp.sum(w * w, -1)
        if J > 0:
            tot = tot + 0.5 * jnp.sum(((xb[:, None, :J] - m[None]) / sig[None]) ** 2, -1)
        tot = tot + base[None]
        if table is not None:
            tot = tot + cost.beta * table[:, jnp.where(cat >= 0, cat, table.shape[1] - 1)].T
        return jnp.where(active[None], tot, jnp.inf)

    return rows


def _batch_stats(
    cost: CECCost, x: Array, side, labels: Array, K: int, chunk: int, axis=None, n_rows=None
) -> CECStats:
    """Statistics of the partition ``labels`` in the compiled engine's layout, BLAS-shaped.

    Two passes over chunks of ``chunk`` rows (means, then scatters of the centred points, as every cost's
    ``stats``), each a GEMM per chunk with the chunk's one-hot rows r_i (no (n, K) array): the sums
    ``r^T x``, then the K scatters ``(r_i ⊗ (x_i - mu_{l_i}))^T (x_i - mu_{l_i})``. Rows with label ``K``
    (padding) count nowhere; with ``n_rows`` (may be traced) the chunks after the first ``n_rows`` rows
    are skipped. Under ``shard_map`` (``axis`` set) each device sums its
    rows and the partial sums are reduced with ``psum``.
    """
    from jax.scipy.special import xlogy

    def total(v):
        return v if axis is None else lax.psum(v, axis)

    J = cost.n_dec
    d = x.shape[1] - J
    m = cost.n_labels
    n = x.shape[0]
    b = min(chunk, n)
    pad = (-n) % b
    xp = jnp.pad(x, ((0, pad), (0, 0)))
    lp = jnp.pad(labels, (0, pad), constant_values=K)
    n_chunks = (n + pad) // b if n_rows is None else (n_rows + b - 1) // b

    def rows(j):  # one chunk's labels, rows and one-hot rows (label K, padding: a zero row)
        lq = lax.dynamic_slice_in_dim(lp, j * b, b)
        return lq, lax.dynamic_slice_in_dim(xp, j * b, b), jax.nn.one_hot(lq, K, dtype=x.dtype)

    def sums(j, acc):  # first pass: counts and coordinate sums
        lq, xq, rq = rows(j)
        return acc[0] + rq.sum(0), acc[1] + rq.T @ xq

    nk, sx = total(lax.fori_loop(0, n_chunks, sums, (jnp.zeros(K, x.dtype), jnp.zeros((K, J + d), x.dtype))))
    safe = jnp.maximum(nk, 1.0)
    mean = sx / safe[:, None]
    t_mean, s = mean[:, :J], sx[:, J:]

    def centred(j, acc):  # second pass: the centred rows' squares (decision) and scatters (Gaussian)
        lq, xq, rq = rows(j)
        xq = xq - mean[jnp.minimum(lq, K - 1)]
        xd, xg = xq[:, :J], xq[:, J:]
        return acc[0] + rq.T @ (xd * xd), acc[1] + (rq[:, :, None] * xg[:, None, :]).reshape(b, K * d).T @ xg

    t_m2, scatter = total(
        lax.fori_loop(0, n_chunks, centred, (jnp.zeros((K, J), x.dtype), jnp.zeros((K * d, d), x.dtype)))
    )
    if d > 0:
        scatter = scatter.reshape(K, d, d) + cost.ridge * jnp.eye(d, dtype=x.dtype)
        scale = jnp.linalg.cholesky(scatter)
    else:
        scale = jnp.zeros((K, 0, 0), x.dtype)
    if m > 0:  # exact integer counts: rows of label K (padding) or category -1 fall past the last segment
        cell = jnp.where((labels < K) & (side >= 0), labels * m + side, K * m)
        counts = total(jax.ops.segment_sum(jnp.ones(n, x.dtype), cell, K * m, mode="drop").reshape(K, m))
    else:
        counts = jnp.zeros((K, 0), x.dtype)
    return CECStats(nk, s, scale, t_mean, t_m2, counts, counts.sum(1), xlogy(counts, counts).sum(1))


def fit_batch(
    key: Array,
    cost,
    x: Array,
    side,
    config: HartiganConfig | None = None,
    *,
    K: int,
    min_size,
    mesh=None,
    chunk: int = 1024,
    centres=None,
    **options,
) -> tuple[HartiganFit, BatchResult]:
    """Batch (Lloyd-type) CEC restarts, then optionally exact Hartigan passes from the best one.

    Each step assigns every point at once to the slot of smallest :func:`assignment_costs` (an n x K
    matrix, one GEMM per chunk of ``chunk`` points), then recomputes every slot's statistics from
    scratch (two-pass, one-hot GEMMs; :func:`_batch_stats`); slots with fewer than ``min_size`` points
    or a degenerate model are removed (never the last one). Stops when no label changes or after
    ``max_iter`` steps. Restarts run one after another (``lax.map``), each from its own k-means++ (or
    random) partition.

    When to use which: the exact Hartigan engine (:func:`fit`) is the paper's optimiser and replays the
    authors' program; one pass costs O(n K d^2) sequential work. Batch steps cost the same FLOPs but as
    BLAS-shaped, parallel array work (jit, any device), so they reach the basin of a good partition
    quickly for large n; they do not guarantee a Hartigan local optimum (a Lloyd step is not a descent
    step of the cost), hence ``polish``: Hartigan passes from the best batch partition (usually few,
    since most points are already placed). Use batch mode from about n = 10^4-10^5 points.

    Parameters
    ----------
    key : JAX PRNG key
        Seeds the initial partitions.
    cost : CECCost
        The cost.
    x : array (n, d)
        The data (float64).
    side : int32 array (n,) or None
        Label category of every point (-1: unlabelled), or None.
    config : HartiganConfig or None, default=None
        The options; None: the defaults. ``max_passes`` caps the polish's passes; ``tol`` is not read.
    K : int
        Slots (initial clusters).
    min_size : float
        A cluster with fewer points is deleted.
    mesh : None or a 1-D :class:`jax.sharding.Mesh` with axis ``"data"``, default=None
        (:mod:`ppclust._devices`) the points are split over its devices (``shard_map``; n padded with
        rows that count nowhere), every device computes its rows of the cost matrix and its partial
        sufficient statistics, reduced with ``psum``. The results equal the one-device ones up to the
        order of floating-point sums.
    chunk : int, default=1024
        Points per GEMM of the cost matrix.
    centres : array (m, d) or None, default=None
        With ``init="labels"``: the restarts start from :func:`seeded_partitions` (see :func:`fit`).
    **options
        Fields of :class:`HartiganConfig` replacing those of ``config``.

    Returns
    -------
    (HartiganFit, BatchResult)
        The first holds the polished (or best batch) result, the second the batch restarts.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust.inference import cecib, hartigan
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 8.0])
    >>> with jax.enable_x64(True):
    ...     X = jnp.asarray(x)
    ...     side = jnp.full(40, -1, jnp.int32)  # no labels
    ...     fitted, runs = hartigan.fit_batch(jax.random.key(0), cecib.make_cost(X, 0), X, side, K=2,
    ...                                       min_size=4.0, n_init=2)
    >>> runs.labels.shape, int(fitted.best.active.sum())
    ((2, 40), 2)
    """
    config = _config(config, options)
    config.check_unused(("tol",), "hartigan.fit_batch")
    n_init, init, max_iter, reassign, backend = (
        config.n_init,
        config.init,
        config.max_iter,
        config.reassign,
        config.backend,
    )
    _check_init(init, centres)
    # the rows padded up to a size bucket (a multiple of the mesh's devices): one program per bucket; padding
    # rows hold label K (in no statistic, never reassigned) and side -1
    n = x.shape[0]
    nb = bucket_size(n)
    if mesh is not None:
        from ppclust import _devices

        nb = _devices.pad_rows(nb, mesh)
    xp, sp, _, n_valid = _padded(x, side, None, K, nb)
    if init == "labels":
        labels0 = seeded_partitions(key, x, centres, K, n_init)
    else:
        # k-means++ never draws a padding row; random labels are drawn per row (the same on the real rows)
        labels0 = _initial_labels(key, xp, K=K, n_init=n_init, init=init, sharding=None, n_valid=n_valid)
    labels0 = _pad_labels(labels0, n, nb, K)
    valid = _put(np.arange(nb) < n)
    kw = dict(K=K, min_size=min_size, max_iter=max_iter, chunk=chunk)
    if mesh is None:
        res = _batch_restarts(cost, xp, sp, labels0, valid, **kw)
    else:
        res = _batch_runs_sharded(cost, xp, sp, _put(labels0), valid, **kw, mesh=mesh)
    res = BatchResult(*(np.asarray(v) for v in res))  # on the host: no program per shape from here on
    res = res._replace(labels=res.labels[:, :n])
    c = np.where(np.isfinite(res.cost), res.cost, np.inf)
    b = int(np.argmin(c))
    if config.polish:
        best = run(
            cost,
            x,
            side,
            res.labels[b],
            K=K,
            min_size=min_size,
            max_passes=config.max_passes,
            reassign=reassign,
            backend=backend,
        )
    else:
        lb = _pad_labels(res.labels[b : b + 1], n, nb, K)
        labels, st, costs, active = jax.tree_util.tree_map(
            lambda v: np.asarray(v)[0], _init_states(cost, xp, sp, _put(lb), K=K)
        )
        best = _batch_result(_put(labels[:n]), active, st, costs, res, b)
    res = BatchResult(*(_put(v) for v in res))
    fitted = HartiganFit(best, res.cost, res.n_iter, _put(np.asarray(res.active).sum(-1), np.int32))
    return fitted, res


def _batch_loop(cost, x, side, labels0, valid, *, K, min_size, max_iter, chunk, axis=None) -> BatchResult:
    """Batch restarts over the rows this device holds (all rows when ``axis`` is None); ``valid`` marks
    the real rows, a prefix of them (padding rows keep label K, count nowhere and cost no work)."""
    n_rows = valid.sum()

    def one(l0):
        def stats_of(labels):
            cs = _batch_stats(cost, x, side, labels, K, chunk, axis, n_rows)
            active = (cs.n >= min_size) & ~cost.degenerate(cs)
            keep = jnp.zeros(K, bool).at[jnp.argmax(cs.n)].set(True)  # never remove the last slot
            return cs, jnp.where(jnp.any(active), active, keep)

        def body(carry):
            labels, _, it = carry
            cs, active = stats_of(labels)
            new = _assign(cs, cost, x, side, active, chunk, n_rows)
            new = jnp.where(valid, new, K)
            changed = jnp.any(new != labels)
            if axis is not None:
                changed = lax.psum(changed.astype(jnp.int32), axis) > 0
            return new, changed, it + 1

        def cond(carry):
            _, changed, it = carry
            return changed & (it < max_iter)

        l0 = jnp.where(valid, l0.astype(jnp.int32), K)
        labels, changed, it = lax.while_loop(cond, body, (l0, jnp.asarray(True), 0))
        cs = _batch_stats(cost, x, side, labels, K, chunk, axis, n_rows)
        costs = cost.cost(cs)
        active = cs.n > 0
        return BatchResult(labels, active, jnp.sum(jnp.where(active, costs, 0.0)), it, ~changed)

    return lax.map(one, labels0)


def _batch_restarts(cost, x, side, labels0, valid, **kw) -> BatchResult:
    """:func:`_batch_runs` one restart per compiled call (the same program for any ``n_init``; each restart
    computed as inside the batched call), waiting interruptibly (:func:`ppclust._progress.wait`); host
    ``labels0`` (R, n) in, host arrays out."""
    runs = [
        _progress.run(_batch_runs, cost, x, side, _put(labels0[r : r + 1]), valid, **kw)
        for r in range(labels0.shape[0])
    ]
    return jax.tree.map(lambda *a: np.concatenate([np.asarray(v) for v in a]), *runs)


@partial(jax.jit, static_argnames=("K", "chunk"))
def _batch_runs(cost, x, side, labels0, valid, *, K, min_size, max_iter, chunk) -> BatchResult:
    return _batch_loop(cost, x, side, labels0, valid, K=K, min_size=min_size, max_iter=max_iter, chunk=chunk)


def _batch_runs_sharded(cost, x, side, labels0, valid, *, K, min_size, max_iter, chunk, mesh) -> BatchResult:
    """:func:`_batch_runs` with the points split over ``mesh`` (axis ``"data"``; the row count a multiple of
    its devices)."""
    from ppclust._devices import AXIS

    return _batch_sharded_jit(
        cost,
        x,
        side,
        labels0,
        valid,
        K=K,
        min_size=min_size,
        max_iter=max_iter,
        chunk=chunk,
        mesh=mesh,
        axis=AXIS,
    )


@partial(jax.jit, static_argnames=("K", "chunk", "mesh", "axis"))
def _batch_sharded_jit(cost, x, side, labels0, valid, *, K, min_size, max_iter, chunk, mesh, axis):
    from jax.sharding import PartitionSpec as P

    def per_device(cost, x, side, labels0, valid, min_size, max_iter):
        return _batch_loop(
            cost, x, side, labels0, valid, K=K, min_size=min_size, max_iter=max_iter, chunk=chunk, axis=axis
        )

    out_specs = BatchResult(P(None, axis), P(), P(), P(), P())
    side_spec = None if side is None else P(axis)
    return jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=(P(), P(axis), side_spec, P(None, axis), P(axis), P(), P()),
        out_specs=out_specs,
        check_vma=False,
    )(cost, x, side, labels0, valid, min_size, max_iter)


# ---------------------------------------------------------------------------------------------
# batch steps with rows spread over processes
# ---------------------------------------------------------------------------------------------


def fit_batch_rows(
    key: Array,
    cost,
    x,
    side,
    layout,
    config: HartiganConfig | None = None,
    *,
    K: int,
    min_size,
    chunk: int = 1024,
    centres=None,
    **options,
) -> HartiganFit:
    """:func:`fit_batch` on rows spread over processes (:mod:`ppclust.distributed`); call it on every process.

    Every step is the one :func:`fit_batch` takes on the whole data, with the work split by rows:

    * **Starts.** ``init="random"``: the label of global row ``i`` is entry ``i`` of the one-process draw
      (each process draws the entries up to its last row and keeps its own). ``init="k-means++"`` and
      ``"labels"``: the D^2 sampling of :func:`ppclust.inference.init.kmeanspp_from_uniforms` from the same
      draws (:func:`_kmeanspp_draws`), the sum of the D^2 weights and their running sum reduced over
      processes in process order, the chosen row sent by the process holding it; every row then goes to
      its nearest centre.
    * **Batch steps.** One program over the mesh of every process's devices: each device's rows of the
      cost matrix, the slots' counts, sums, scatters and label counts reduced with ``psum``
      (:func:`_batch_stats`), so slot removal and convergence are decided identically everywhere.
    * **Polish.** The Hartigan passes visit the rows in global order: process ``p`` runs its rows from the
      slots' statistics left by process ``p - 1`` and hands them on (the statistics, costs and live slots,
      never rows); with ``reassign="immediate"`` a deleted slot's points are reinserted process by process
      before the pass goes on. The passes therefore take the decisions of one process visiting all rows,
      sequentially (no speed-up, memory split).

    The labels equal those of :func:`fit_batch` on all rows up to the order of floating-point sums
    (sums over processes, and the XLA engine in the polish where one process on CPU runs the compiled one).

    Parameters
    ----------
    key : JAX PRNG key
        Seeds the initial partitions (the same on every process).
    cost : CECCost
        The cost, built for all rows (``n_total`` the global count, the ridge of all rows).
    x : jax.Array of shape (P * block, d)
        The global rows (:func:`ppclust.distributed.process_rows`).
    side : jax.Array of int32 of shape (P * block,) or None
        Label category of every position (-1: unlabelled and padding), or None.
    layout : ppclust._devices.RowLayout
        The rows per process.
    config : HartiganConfig or None, default=None
        As :func:`fit_batch`.
    K : int
        Slots.
    min_size : float
        A cluster with fewer points is deleted.
    chunk : int, default=1024
        Points per GEMM of the cost matrix.
    centres : array (m, d) or None, default=None
        With ``init="labels"``: the fixed centres (the same on every process).
    **options
        Fields of :class:`HartiganConfig`.

    Returns
    -------
    HartiganFit
        As :func:`fit_batch`; ``best.labels`` holds this process's rows only (NumPy, ``(counts[me],)``),
        every other field is the same on every process.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> from ppclust import distributed
    >>> from ppclust.inference import cecib, hartigan
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 8.0])
    >>> with jax.enable_x64(True):
    ...     X = distributed.process_rows(x)  # one process here: the same code runs on every process
    ...     S = distributed.process_labels(np.full(40, -1))  # no labels
    ...     cost = cecib.make_cost(jnp.asarray(x), 0)
    ...     fitted = hartigan.fit_batch_rows(jax.random.key(0), cost, X, S, distributed.layout(X), K=2,
    ...                                      min_size=4.0, n_init=2, init="random")
    ...     ref, _ = hartigan.fit_batch(jax.random.key(0), cost, jnp.asarray(x), jnp.full(40, -1, jnp.int32),
    ...                                 K=2, min_size=4.0, n_init=2, init="random")
    >>> bool((fitted.best.labels == np.asarray(ref.best.labels)).all())
    True
    """
    from ppclust import _devices

    config = _config(config, options)
    config.check_unused(("tol",), "hartigan.fit_batch_rows")
    _check_init(config.init, centres)
    if config.reassign not in ("lazy", "immediate"):
        raise ValueError(f"reassign must be 'lazy' or 'immediate', got {config.reassign!r}")
    me = jax.process_index()
    n_me = layout.counts[me]
    x_loc = np.asarray(_devices.local_rows(x, layout), np.float64)
    labels0 = _rows_initial_labels(
        key, x_loc, layout, K=K, n_init=config.n_init, init=config.init, centres=centres
    )
    mesh = _devices.global_mesh()
    valid = _devices.from_process_rows(np.ones(n_me, bool), layout, False)
    l0 = _rows_columns(_pad_labels(labels0, n_me, layout.block, K), layout, mesh)
    res = _batch_sharded_jit(
        cost,
        x,
        side,
        l0,
        valid,
        K=K,
        min_size=min_size,
        max_iter=config.max_iter,
        chunk=chunk,
        mesh=mesh,
        axis=_devices.AXIS,
    )
    labels = _local_columns(res.labels)[:, :n_me]
    res = BatchResult(labels, *(np.asarray(v.addressable_data(0)) for v in res[1:]))
    c = np.where(np.isfinite(res.cost), res.cost, np.inf)
    b = int(np.argmin(c))
    xb = _put(pad_rows(x_loc, layout.block)[0])
    sb = None
    if side is not None:
        sb = _put(pad_vector(np.asarray(_devices.local_rows(side, layout), np.int32), layout.block, -1))
    start = _rows_init_state(cost, x, side, res.labels[b], layout, K=K, chunk=chunk)
    if config.polish:
        best = _rows_polish(
            cost,
            xb,
            sb,
            start,
            layout,
            K=K,
            min_size=min_size,
            max_passes=config.max_passes,
            reassign=config.reassign,
        )
    else:
        labels_b, active, stats, costs = start
        best = _batch_result(labels_b, active, stats, costs, res, b)
    return HartiganFit(best, _put(res.cost), _put(res.n_iter), _put(res.active.sum(-1), np.int32))


def _rows_initial_labels(key, x_loc, layout, *, K, n_init, init, centres) -> np.ndarray:
    """(n_init, counts[me]) initial slots of this process's rows, those :func:`fit_batch` gives them."""
    from ppclust import _devices

    me = jax.process_index()
    lo, n = layout.offsets[me], layout.n
    hi = lo + layout.counts[me]
    if init == "random":  # entry i of the one-process draw is global row i's (per-row draws)
        draws = np.asarray(_random_prefix(key, K=K, n_init=n_init, size=bucket_size(max(hi, 1))))
        return draws[:, lo:hi].astype(np.int32)
    d = x_loc.shape[1]
    if init == "labels":
        c = np.atleast_2d(np.asarray(centres, np.float64))
        if not 1 <= c.shape[0] <= K or c.shape[1] != d:
            raise ValueError(f"centres must be (m, {d}) with 1 <= m <= K = {K}, got {c.shape}")
        c0 = np.zeros((K, d))
        c0[: c.shape[0]] = c
        fixed = np.arange(K) < c.shape[0]
    else:
        c0, fixed = np.zeros((K, d)), np.zeros(K, bool)
    first, u = _kmeanspp_draws(key, np.int32(n), K=K, n_init=n_init, dtype="float64")
    out = np.empty((n_init, hi - lo), np.int32)
    if init == "labels":
        sq = np.einsum("ij,ij->i", x_loc, x_loc)
    else:
        xb = _put(pad_rows(x_loc, layout.block)[0])
    for r in range(n_init):
        cs = _rows_kmeanspp(int(first[r]), u[r], x_loc, c0, fixed, layout, _devices)
        if init == "labels":  # seeded_partitions' nearest centre
            out[r] = _nearest_centres(x_loc, sq, cs)
        else:  # voronoi's nearest seed
            out[r] = np.asarray(_nearest(xb, _put(cs)))[: hi - lo]
    return out


@partial(jax.jit, static_argnames=("K", "n_init", "size"))
def _random_prefix(key, *, K, n_init, size):
    return jax.vmap(lambda k: init_random(k, size, K))(jax.random.split(key, n_init))


@jax.jit
def _nearest(x, c):
    d2 = jnp.sum((x[:, None, :] - c[None, :, :]) ** 2, -1)
    return jnp.argmin(d2, axis=1).astype(jnp.int32)


def _rows_kmeanspp(first, u, x_loc, centres, fixed, layout, devices) -> np.ndarray:
    """:func:`ppclust.inference.init.kmeanspp_from_uniforms`'s centres (k, d) with the rows spread over
    processes: sums of the D^2 weights reduced, the running sum continued in process order."""
    me = jax.process_index()
    n, off = layout.n, layout.offsets[me]
    k, d = centres.shape
    cs = np.array(centres, np.float64)
    any_chosen = bool(fixed.any())
    if any_chosen:
        d2 = np.min(np.where(fixed[None], ((x_loc[:, None] - cs[None]) ** 2).sum(-1), np.inf), axis=1)
    else:
        d2 = np.zeros(len(x_loc))
    for j in range(k):
        if fixed[j]:
            continue
        if any_chosen:
            tot = float(devices.process_sum(np.float64(d2.sum())))
            p = d2 / tot if tot > 0 else np.full(len(x_loc), 1.0 / n)
            cum = np.cumsum(p)
            parts = devices.process_gather(np.float64(cum[-1] if len(cum) else 0.0))
            cum = cum + np.sum(parts[:me])  # the running sum of the earlier processes' rows
            v = np.sum(parts) * (1 - u[j])
            loc = int(np.searchsorted(cum, v)) if len(cum) else 0
            cand = off + loc if loc < len(cum) else n
            i = int(devices.process_gather(np.int64(cand)).min())
            i = min(i, n - 1)
        else:
            i = first
        mine = off <= i < off + len(x_loc)
        c = devices.process_sum(x_loc[i - off] if mine else np.zeros(d))
        dnew = ((x_loc - c[None]) ** 2).sum(-1)
        d2 = np.minimum(d2, dnew) if any_chosen else dnew
        cs[j] = c
        any_chosen = True
    return cs


def _rows_columns(local, layout, mesh):
    """The global (R, P * block) array whose column block ``p`` is process ``p``'s ``local`` (R, block)."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    from ppclust import _devices

    shape = (local.shape[0], layout.block * len(layout.counts))
    sharding = NamedSharding(mesh, P(None, _devices.AXIS))
    return jax.make_array_from_process_local_data(sharding, np.asarray(local, np.int32), shape)


def _local_columns(arr) -> np.ndarray:
    """This process's columns (its block) of a global (R, N) array sharded by columns, as NumPy."""
    parts, seen = [], set()
    for shard in sorted(arr.addressable_shards, key=lambda s: s.index[1].start or 0):
        lo = shard.index[1].start or 0
        if lo not in seen:
            seen.add(lo)
            parts.append(np.asarray(shard.data))
    return np.concatenate(parts, axis=1)


def _rows_init_state(cost, x, side, labels_loc, layout, *, K, chunk):
    """:func:`_init_state` of the partition whose rows of this process are ``labels_loc``: ``(labels_loc,
    active, stats, costs)``, the statistics reduced over processes (the same on every process)."""
    from ppclust import _devices

    me = jax.process_index()
    mesh = _devices.global_mesh()

    def state(lab):
        g = _devices.from_process_rows(np.asarray(lab, np.int32), layout, K)
        stats = _rows_stats(cost, x, side, g, K=K, chunk=chunk, mesh=mesh, axis=_devices.AXIS)
        stats = jax.tree_util.tree_map(lambda v: np.asarray(v.addressable_data(0)), stats)
        costs, active = (np.asarray(v) for v in _slot_check(cost, stats))
        return stats, costs, active

    stats, costs, active = state(labels_loc)
    if not active.any():  # every slot unusable: all points in slot 0, kept live whatever its cost
        labels_loc = np.zeros(layout.counts[me], np.int32)
        stats, costs, _ = state(labels_loc)
        active = np.arange(K) == 0
    return np.asarray(labels_loc, np.int32), active, stats, costs


@partial(jax.jit, static_argnames=("K", "chunk", "mesh", "axis"))
def _rows_stats(cost, x, side, labels, *, K, chunk, mesh, axis):
    from jax.sharding import PartitionSpec as P

    def per_device(cost, x, side, labels):
        n_rows = jnp.sum(labels < K)  # this device's real rows, a prefix of its rows
        return _batch_stats(cost, x, side, labels, K, chunk, axis, n_rows)

    return jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=(P(), P(axis), None if side is None else P(axis), P(axis)),
        out_specs=P(),
        check_vma=False,
    )(cost, x, side, labels)


@jax.jit
def _slot_check(cost, stats):
    """(costs, live) of the slots: live when non-empty, not degenerate and of finite cost."""
    costs = cost.cost(stats)
    return costs, (cost.count(stats) > 0) & ~cost.degenerate(stats) & jnp.isfinite(costs)


@jax.jit
def _pass_end(cost, stats, costs, active):
    """The end-of-pass deletion of degenerate slots (never every slot): ``(active, any deleted)``."""
    degen = active & (cost.degenerate(stats) | ~jnp.isfinite(costs))
    degen = degen & (active.sum() > degen.sum())
    return active & ~degen, jnp.any(degen)


@partial(jax.jit, static_argnames=("K", "immediate"))
def _rows_segment(cost, x, side, st: _State, t0, n_rows, min_size, tol, *, K, immediate):
    """Visit this process's rows from ``t0`` on: ``(state, next row, event)``; with ``immediate`` the
    visit stops after a deletion, ``event`` the deleted slot (else -1)."""

    def cond(c):
        _, t, ev = c
        return (t < n_rows) & (ev < 0)

    def body(c):
        st, t, _ = c
        st, small, a = _point_move(cost, x, side, st, t, K=K, min_size=min_size, tol=tol)
        ev = jnp.where(small, a, -1) if immediate else jnp.asarray(-1)
        return st, t + 1, ev.astype(jnp.int32)

    return lax.while_loop(cond, body, (st, jnp.asarray(t0, jnp.int32), jnp.asarray(-1, jnp.int32)))


@partial(jax.jit, static_argnames=("K",))
def _rows_reinsert(cost, x, side, st: _State, a, *, K):
    return _reassign_cluster(cost, x, side, st, a, K)


@partial(jax.jit, static_argnames=("K",))
def _rows_reinsert_all(cost, x, side, st: _State, *, K):
    return _reassign_all(cost, x, side, st, K)


def _from_process(q: int, tree):
    """Process ``q``'s value of ``tree`` (NumPy leaves of the same shapes on every process), exactly."""
    from ppclust import _devices

    leaves, treedef = jax.tree_util.tree_flatten(tree)
    arrs = [np.asarray(v) for v in leaves]
    flat = np.concatenate([a.astype(np.float64).ravel() for a in arrs]) if arrs else np.zeros(0)
    got = _devices.process_gather(flat)[q]
    out, pos = [], 0
    for a in arrs:
        out.append(got[pos : pos + a.size].reshape(a.shape).astype(a.dtype))
        pos += a.size
    return jax.tree_util.tree_unflatten(treedef, out)


def _rows_polish(cost, xb, sb, start, layout, *, K, min_size, max_passes, reassign) -> HartiganResult:
    """Hartigan passes over the rows of every process in global order (see :func:`fit_batch_rows`)."""
    me = jax.process_index()
    counts = layout.counts
    imm = reassign == "immediate"
    labels, active, stats, costs = start
    lab = _put(pad_vector(labels, layout.block, K))
    shared = [(active, stats, costs, np.asarray(False))]  # the same on every process

    def turn(q, fn, extra):
        """Process q runs ``fn(state) -> (state, extra)``; every process gets q's shared state and extra."""
        nonlocal lab
        mine = (shared[0], extra)
        if me == q:
            act, stats_, costs_, moved_ = shared[0]
            st, ex = fn(
                _State(lab, _put(act), jax.tree_util.tree_map(_put, stats_), _put(costs_), _put(moved_))
            )
            lab = st.labels
            shared_q = (np.asarray(st.active), _np_tree(st.stats), np.asarray(st.costs), np.asarray(st.moved))
            mine = (shared_q, tuple(np.asarray(e) for e in ex))
        shared[0], got = _from_process(q, mine)
        return got

    def everyone(fn):  # each process in turn: its rows in global index order
        for q in range(len(counts)):
            if counts[q]:
                turn(q, lambda st: (fn(st), ()), ())

    def reinsert_all(st):
        return _rows_reinsert_all(cost, xb, sb, st, K=K)

    if imm:
        everyone(reinsert_all)
    trace = np.full(max_passes + 1, np.nan)
    ktrace = np.zeros(max_passes + 1, np.int32)
    trace[0], ktrace[0] = _energy_np(shared[0]), shared[0][0].sum()
    p = 0
    while p == 0 or (bool(shared[0][3]) and p < max_passes):
        a_, s_, c_, _ = shared[0]
        shared[0] = (a_, s_, c_, np.asarray(False))
        for q in range(len(counts)):
            t = 0
            while counts[q] and t < counts[q]:
                t, ev = turn(
                    q,
                    lambda st, t=t, q=q: _segment_out(
                        _rows_segment(cost, xb, sb, st, t, counts[q], min_size, 0.0, K=K, immediate=imm)
                    ),
                    (np.int32(0), np.int32(-1)),
                )
                t, ev = int(t), int(ev)
                if ev < 0:
                    break
                everyone(lambda st, ev=ev: _rows_reinsert(cost, xb, sb, st, ev, K=K))
        a_, s_, c_, moved = shared[0]
        trace[p + 1], ktrace[p + 1] = _energy_np(shared[0]), a_.sum()
        a_, gone = (np.asarray(v) for v in _pass_end(cost, s_, c_, a_))
        shared[0] = (a_, s_, c_, np.asarray(bool(moved) or bool(gone)))
        if imm:
            everyone(reinsert_all)
        p += 1
    converged = not bool(shared[0][3])
    everyone(reinsert_all)
    a_, s_, c_, _ = shared[0]
    return HartiganResult(
        np.asarray(lab)[: counts[me]],
        _put(a_),
        jax.tree_util.tree_map(_put, s_),
        _put(c_),
        _put(_energy_np(shared[0])),
        _put(np.int32(p)),
        _put(np.bool_(converged)),
        _put(trace),
        _put(ktrace),
    )


def _segment_out(out):
    st, t, ev = out
    return st, (t, ev)


def _np_tree(tree):
    return jax.tree_util.tree_map(np.asarray, tree)


def _energy_np(shared) -> float:
    active, _, costs, _ = shared
    return float(np.sum(np.where(active, costs, 0.0)))
