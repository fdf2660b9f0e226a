r"""Compiled (numba) twins of the set-up of the compiled Hartigan engine (:mod:`._hartigan_cpu`).

The set-up of a run (the k-means++ partitions and the initial statistics of every restart) compiled once
per argument *types* (numba, cached on disk), so it runs for any n without a program compiled per size of
the data:

* :func:`kmeanspp_from_uniforms`: twin of :func:`ppclust.inference.init.kmeanspp_from_uniforms`, fed
  with the draws of :func:`ppclust.inference.init.kmeanspp_uniforms` (a shape that does not depend on
  n), so both engines pick the same seeds;
* :func:`voronoi`: twin of :func:`ppclust.inference.hartigan.voronoi`;
* :func:`initial_labels`: the k-means++ partitions of R restarts;
* :func:`init_states`: twin of ``hartigan._init_states`` (the cost's ``stats``, ``cost``, ``degenerate``
  and the one-cluster fallback of ``hartigan._init_state``) written straight into the engine's layout
  (:class:`._hartigan_cpu.Slots`): two-pass means and scatters (+ ridge) with their Cholesky factors, the
  decision coordinates' means and centred sums of squares, the label counts; costs and degeneracy by the
  engine's own twins (:func:`._hartigan_cpu.cluster_cost`, :func:`._hartigan_cpu.degenerate`).

Values agree with the JAX functions to rounding (``tests/inference/test_init_cpu.py``); every twin
carries the name of the JAX function it mirrors.
"""

from __future__ import annotations

import math

import numpy as np

from ppclust.inference import _hartigan_cpu as _h

__all__ = ["kmeanspp_from_uniforms", "voronoi", "initial_labels", "init_states"]

_njit = _h.njit


@_njit
def kmeanspp_from_uniforms(first, u, x, centres, fixed, n_valid):
    """Twin of :func:`ppclust.inference.init.kmeanspp_from_uniforms` (``n_valid`` an int, the real rows).

    Returns ``(idx (k,) int32, centres (k, d))``.

    Parameters
    ----------
    first : int
        Index of the first centre when no row is fixed.
    u : ndarray of shape (k,)
        Uniforms in [0, 1), centre j drawing with ``u[j]``.
    x : ndarray of float64 of shape (n, d)
        Points (rows from ``n_valid`` on are padding).
    centres : ndarray of shape (k, d)
        Centres; the rows where ``fixed`` is True are kept.
    fixed : ndarray of bool of shape (k,)
        Rows of ``centres`` that count as already chosen.
    n_valid : int
        Number of real rows of ``x``.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference._init_cpu import kmeanspp_from_uniforms
    >>> x = np.array([[0.0], [1.0], [10.0]])
    >>> idx, _ = kmeanspp_from_uniforms(0, np.array([0.0, 0.5]), x, np.zeros((2, 1)), np.zeros(2, bool), 3)
    >>> idx.tolist()
    [0, 2]
    """
    n, d = x.shape
    k = centres.shape[0]
    m = n_valid
    idx = np.full(k, -1, np.int32)
    cs = centres.copy()
    d2 = np.zeros(n)
    any_chosen = False
    for j in range(k):
        if fixed[j]:
            any_chosen = True
    if any_chosen:
        big = np.finfo(np.float64).max
        for i in range(m):
            best = big
            for j in range(k):
                if fixed[j]:
                    acc = 0.0
                    for c in range(d):
                        t = x[i, c] - centres[j, c]
                        acc += t * t
                    best = min(best, acc)
            d2[i] = best
    cum = np.empty(n)
    for j in range(k):
        if fixed[j]:
            continue
        if any_chosen:
            tot = 0.0
            for i in range(n):
                tot += d2[i]
            acc = 0.0
            for i in range(n):
                if tot > 0:
                    acc += d2[i] / tot
                elif i < m:
                    acc += 1.0 / m
                cum[i] = acc
            r = cum[n - 1] * (1.0 - u[j])
            pick = n - 1  # (never needed: r <= cum[n - 1]; XLA clamps the index the same way)
            for i in range(n):  # searchsorted (left): the first i with cum_i >= r
                if cum[i] >= r:
                    pick = i
                    break
        else:
            pick = first
        idx[j] = pick
        for c in range(d):
            cs[j, c] = x[pick, c]
        for i in range(n):
            acc = 0.0
            if i < m:
                for c in range(d):
                    t = x[i, c] - cs[j, c]
                    acc += t * t
            d2[i] = min(d2[i], acc) if any_chosen else acc
        any_chosen = True
    return idx, cs


@_njit
def voronoi(x, centre_idx):
    """Twin of :func:`ppclust.inference.hartigan.voronoi`: nearest seed (ties to the earlier), (n,) int32.

    Parameters
    ----------
    x : ndarray of float64 of shape (n, d)
        Points.
    centre_idx : ndarray of int of shape (k,)
        Indices of the seed points.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference._init_cpu import voronoi
    >>> voronoi(np.array([[0.0], [1.0], [9.0]]), np.array([0, 2])).tolist()
    [0, 0, 1]
    """
    n, d = x.shape
    k = centre_idx.shape[0]
    out = np.zeros(n, np.int32)
    for i in range(n):
        best = np.inf
        for j in range(k):
            acc = 0.0
            for c in range(d):
                t = x[i, c] - x[centre_idx[j], c]
                acc += t * t
            if acc < best:
                best = acc
                out[i] = j
    return out


@_njit
def initial_labels(first, u, x, K):
    """(R, n) int32 k-means++ partitions of R restarts from their draws ``first`` (R,), ``u`` (R, K).

    The compiled ``hartigan._initial_labels``.

    Parameters
    ----------
    first : ndarray of int of shape (R,)
        First centre of each restart.
    u : ndarray of shape (R, K)
        The restarts' uniforms (:func:`ppclust.inference.init.kmeanspp_uniforms`).
    x : ndarray of float64 of shape (n, d)
        Points.
    K : int
        Number of seeds per restart.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference._init_cpu import initial_labels
    >>> x = np.array([[0.0], [1.0], [10.0]])
    >>> initial_labels(np.array([0]), np.array([[0.0, 0.5]]), x, 2).tolist()
    [[0, 0, 1]]
    """
    R = first.shape[0]
    n, d = x.shape
    out = np.empty((R, n), np.int32)
    centres = np.zeros((K, d))
    fixed = np.zeros(K, np.bool_)
    for r in range(R):
        idx, _ = kmeanspp_from_uniforms(first[r], u[r], x, centres, fixed, n)
        lab = voronoi(x, idx)
        for i in range(n):  # element by element: a row assignment compiles numba's shape-error path
            out[r, i] = lab[i]
    return out


@_njit
def _cholesky_slot(S, L, k):
    """Lower Cholesky factor of S (d, d) into slot k of the slot-major L[r, c, k]; NaN everywhere when S
    is not (numerically) positive definite (as ``jnp.linalg.cholesky``)."""
    d = S.shape[0]
    for c in range(d):
        acc = S[c, c]
        for q in range(c):
            acc -= L[c, q, k] * L[c, q, k]
        if not acc > 0.0:
            for a in range(d):
                for b in range(d):
                    L[a, b, k] = np.nan
            return
        lcc = math.sqrt(acc)
        L[c, c, k] = lcc
        for r in range(c + 1, d):
            acc = S[r, c]
            for q in range(c):
                acc -= L[r, q, k] * L[c, q, k]
            L[r, c, k] = acc / lcc
        for r in range(c):
            L[r, c, k] = 0.0


@_njit
def _stats_one(x, side, s, K, J, ridge):
    """The statistics of one partition ``s.labels`` into ``s`` (slot-major factors), two-pass; label K (or
    more): no slot."""
    labels = s.labels
    n = s.n
    sT = s.sT
    L = s.L
    tmean = s.tmean
    tm2 = s.tm2
    counts = s.counts
    nlab = s.nlab
    clogc = s.clogc
    npts = x.shape[0]
    d = x.shape[1] - J
    m = counts.shape[1]
    for k in range(K):
        n[k] = 0.0
        nlab[k] = 0.0
        clogc[k] = 0.0
        for c in range(d):
            sT[c, k] = 0.0
        for j in range(J):
            tmean[k, j] = 0.0
            tm2[k, j] = 0.0
        for j in range(m):
            counts[k, j] = 0.0
    for i in range(npts):
        k = labels[i]
        if k < 0 or k >= K:
            continue
        n[k] += 1.0
        for c in range(d):
            sT[c, k] += x[i, J + c]
        for j in range(J):
            tmean[k, j] += x[i, j]
        if m > 0 and side[i] >= 0:
            counts[k, side[i]] += 1.0
    mean = np.zeros((K, max(d, 1)))
    for k in range(K):
        safe = max(n[k], 1.0)
        for c in range(d):
            mean[k, c] = sT[c, k] / safe
        for j in range(J):
            tmean[k, j] /= safe
        for j in range(m):
            c_kj = counts[k, j]
            nlab[k] += c_kj
            if c_kj > 0:
                clogc[k] += c_kj * math.log(c_kj)
    S = np.zeros((K, max(d, 1), max(d, 1)))
    v = np.empty(max(d, 1))
    for i in range(npts):
        k = labels[i]
        if k < 0 or k >= K:
            continue
        for j in range(J):
            t = x[i, j] - tmean[k, j]
            tm2[k, j] += t * t
        for c in range(d):
            v[c] = x[i, J + c] - mean[k, c]
        for a in range(d):
            va = v[a]
            for b in range(a + 1):
                S[k, a, b] += va * v[b]
    for k in range(K):
        for a in range(d):
            S[k, a, a] += ridge
            for b in range(a):
                S[k, b, a] = S[k, a, b]
        if d > 0:
            _cholesky_slot(S[k, :d, :d], L, k)


@_njit
def _costs_one(s, K, data, cfg):
    """``cost.cost`` and the live slots (non-empty, not degenerate, finite cost) of ``_init_state``."""
    n = s.n
    L = s.L
    costs = s.costs
    active = s.active
    d = L.shape[0]
    any_live = False
    for k in range(K):
        logdet = _h.slot_logdet(L, k) if d > 0 else 0.0
        costs[k] = _h.cluster_cost(
            n[k],
            logdet,
            s.tmean[k],
            s.tm2[k],
            s.nlab[k],
            s.clogc[k],
            cfg.n_total,
            cfg.beta,
            data.p,
            data.floor,
            d,
        )
        live = n[k] > 0 and np.isfinite(costs[k])
        if live:
            live = not _h.degenerate(k, n, L, cfg.min_count, cfg.sing_tol)
        active[k] = live
        any_live = any_live or live
    return any_live


@_njit
def init_states(data, cfg, state, K, ridge):
    """Twin of ``hartigan._init_states`` for R restarts, in the engine's layout (arrays filled in place).

    Parameters
    ----------
    data : ppclust.inference._hartigan_cpu.Data
        The points (n, J + d) (decision coordinates first), their label categories (-1 none) and the
        leakage parameters.
    cfg : ppclust.inference._hartigan_cpu.Config
        The engine's scalar parameters (``n_total``, ``beta``, ``min_count``, ``sing_tol`` are read).
    state : ppclust.inference._hartigan_cpu.Slots
        Every field with a leading restart axis R. ``labels`` (R, n) int32 initial slots in 0..K-1 (set to
        0 where no slot of a restart is live: the one-cluster fallback); the other fields are outputs on a
        slot axis Kp >= K (slots from K on: dead, count 1, identity factor); ``L`` holds NaN where a
        scatter is singular.
    K : int
        Slots of the partitions.
    ridge : float
        Pseudo-scatter added to every slot's scatter diagonal.

    Examples
    --------
    >>> from ppclust.inference._init_cpu import init_states
    >>> callable(init_states)
    True
    """
    labels = state.labels
    R = labels.shape[0]
    J = data.p.shape[0]
    x = data.x
    d = x.shape[1] - J
    Kp = state.n.shape[1]
    for r in range(R):
        s = _h.Slots(
            labels[r],
            state.active[r],
            state.n[r],
            state.sT[r],
            state.L[r],
            state.tmean[r],
            state.tm2[r],
            state.counts[r],
            state.nlab[r],
            state.clogc[r],
            state.costs[r],
        )
        _stats_one(x, data.side, s, K, J, ridge)
        if not _costs_one(s, K, data, cfg):
            for i in range(labels.shape[1]):
                if labels[r, i] < K:
                    labels[r, i] = 0
            _stats_one(x, data.side, s, K, J, ridge)
            _costs_one(s, K, data, cfg)
            for k in range(K):
                s.active[k] = k == 0
        for k in range(K, Kp):
            s.n[k] = 1.0
            s.active[k] = False
            s.costs[k] = 0.0
            for a in range(d):
                for b in range(d):
                    s.L[a, b, k] = 1.0 if a == b else 0.0
