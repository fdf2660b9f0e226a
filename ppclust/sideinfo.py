"""Side information: partial labels and (noisy) pairwise links, validated once on the host.

Kept whole (over 700 lines): the validated container, its array views for the solvers (neighbour table,
``Links``), the row-aligned ``RowPairs`` and the pair counts are one data type and the operations on it.

A :class:`SideInfo` holds

* ``labels``: an optional int32 vector of length ``n`` with ``-1`` for unlabelled points;
* ``pairs``, ``sign``, ``weight``: an edge list of ``m`` links. Each pair is stored once as
  ``(i, j)`` with ``i < j``; ``sign`` is ``+1`` (may-link / must-link) or ``-1`` (may-not-link /
  cannot-link); ``weight`` is a positive float (default 1).

It never builds an ``n x n`` matrix. Solvers read the links through :meth:`SideInfo.neighbour_table`,
a padded ``(n, max_deg)`` table that gives O(degree) per-point counting inside ``jit``.

Canonical form (what the constructors guarantee):

* pairs are sorted by ``(i, j, sign)`` with ``i < j``;
* duplicates with the same sign are merged into one entry; the merged weight is the **maximum**
  of the duplicates' weights (a repeated link does not add evidence, as in the SMIC spec);
* a pair given with both signs is an error (``on_conflict="error"``, the default: a
  :class:`~ppclust.errors.ConflictingLinksError` naming the pair), or, with ``on_conflict="keep"``,
  is stored as **two entries**, one per sign. Soft-link methods (TVClust, RDP-means) keep both and
  their terms add up; hard-constraint methods should call :meth:`SideInfo.check_hard`. Which
  estimators use which is decided in one place, ``ppclust.estimators._base.LINK_MODELS``.

Therefore ``SideInfo.from_pairs(si.n, si.pairs, si.sign, si.weight, on_conflict="keep") == si``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ppclust.errors import ConflictingLinksError, InvalidInputError

__all__ = [
    "SideInfo",
    "NeighbourTable",
    "RowPairs",
    "Links",
    "make_links",
    "pair_counts",
    "link_counts",
    "table_within_counts",
    "link_weight_per_point",
    "check_labels",
    "decode_pair_index",
    "labelled_means",
    "link_agreement",
    "link_folds",
    "weigh_link_kinds",
]

_CONFLICT_OPTIONS = ("error", "keep")


class NeighbourTable(NamedTuple):
    """Padded adjacency lists of the links, one row per point.

    Unused slots have ``nbr = 0`` and ``sgn = wgt = 0``, so gathers are always in range and
    contribute nothing to sums such as ``sum_s sgn[i, s] * wgt[i, s] * [z[nbr[i, s]] == k]``.
    ``max_deg`` is at least 1, so the arrays are never zero-width.

    Attributes
    ----------
    nbr : ndarray of int32 of shape (n, max_deg)
        Index of each linked neighbour of a point (0 in padding slots).
    sgn : ndarray of float64 of shape (n, max_deg)
        ``+1`` may-link, ``-1`` may-not-link, ``0`` padding.
    wgt : ndarray of float64 of shape (n, max_deg)
        Link weight, ``0`` padding.

    Examples
    --------
    >>> NeighbourTable.empty(3).nbr.shape
    (3, 1)
    """

    nbr: np.ndarray  # int32 (n, max_deg): neighbour index
    sgn: np.ndarray  # float64 (n, max_deg): +1 may-link, -1 may-not-link, 0 padding
    wgt: np.ndarray  # float64 (n, max_deg): link weight, 0 padding

    @classmethod
    def empty(cls, n: int, width: int = 1) -> NeighbourTable:
        """The table of ``n`` points without links (``width`` padding columns)."""
        return cls(np.zeros((n, width), np.int32), np.zeros((n, width)), np.zeros((n, width)))


class SideInfo:
    """Validated, immutable side information for ``n`` points.

    Parameters
    ----------
    n : int
        Number of points (``n_samples``).
    labels : array-like of int of shape (n,), default=None
        Partial labels, ``-1`` = unlabelled.
    pairs : array-like of int of shape (m, 2), default=None
        Linked point pairs (any order inside a pair; canonicalised to ``i < j``).
    sign : array-like of shape (m,), default=None
        ``+1`` may-link, ``-1`` may-not-link. Required when ``pairs`` is given.
    weight : float or array-like of shape (m,), default=None
        Positive link weights (default 1).
    on_conflict : {"error", "keep"}, default="error"
        What to do with a pair given with both signs (see the module docstring).

    Raises
    ------
    ValueError, TypeError
        On out-of-range indices, self-pairs, contradictory pairs, bad shapes or dtypes; the
        message names the argument and the first offending pair.

    Examples
    --------
    >>> side = SideInfo.from_links(4, must_link=[(0, 1)], cannot_link=[(2, 1)])
    >>> side.pairs.tolist(), side.sign.tolist()
    ([[0, 1], [1, 2]], [1, -1])
    """

    __slots__ = ("n", "labels", "pairs", "sign", "weight", "_frozen")

    def __init__(self, n, labels=None, pairs=None, sign=None, weight=None, *, on_conflict="error"):
        n = _check_n(n)
        lab = None if labels is None else check_labels(labels, n=n, name="labels")
        if pairs is None:
            if sign is not None or weight is not None:
                raise InvalidInputError(
                    "`sign`/`weight` were given without `pairs`; pass the linked pairs too."
                )
            p = np.zeros((0, 2), np.int32)
            s = np.zeros(0, np.int8)
            w = np.zeros(0, np.float64)
        else:
            p = _check_pairs(pairs, n, "pairs")
            if sign is None:
                raise InvalidInputError(
                    "`pairs` were given without `sign`; pass +1 (may-link) or -1 "
                    "(may-not-link) "
                    "for each pair, or use "
                    "SideInfo.from_links(n, must_link=..., cannot_link=...)."
                )
            s = _check_sign(sign, len(p))
            w = _check_weight(weight, len(p), "weight")
            p, s, w = _canonical(p, s, w, n, on_conflict)
        for a in (lab, p, s, w):
            if a is not None:
                a.setflags(write=False)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "labels", lab)
        object.__setattr__(self, "pairs", p)
        object.__setattr__(self, "sign", s)
        object.__setattr__(self, "weight", w)
        object.__setattr__(self, "_frozen", True)

    def __setattr__(self, name, value):
        raise AttributeError("SideInfo is immutable; build a new one with the constructors.")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_labels(cls, y) -> SideInfo:
        """Side information made of partial labels only (``-1`` = unlabelled)."""
        lab = check_labels(y, name="y")
        return cls(len(lab), labels=lab)

    @classmethod
    def from_links(
        cls, n, must_link=None, cannot_link=None, weight=None, on_conflict="error", *, labels=None
    ) -> SideInfo:
        """Side information from lists of must-link and cannot-link pairs.

        Parameters
        ----------
        n : int
        must_link, cannot_link : array-like of int of shape (m, 2), default=None
        weight : float or array-like of shape (m_must + m_cannot,), default=None
            Weights of the must-links followed by the cannot-links, or one scalar for all.
        on_conflict : {"error", "keep"}, default="error"
        labels : array-like of shape (n,), default=None
            Optional partial labels stored alongside.
        """
        n = _check_n(n)
        ml = np.zeros((0, 2), np.int64) if must_link is None else _check_pairs(must_link, n, "must_link")
        cl = (
            np.zeros((0, 2), np.int64) if cannot_link is None else _check_pairs(cannot_link, n, "cannot_link")
        )
        pairs = np.concatenate([ml, cl]).astype(np.int64)
        sign = np.concatenate([np.ones(len(ml), np.int8), -np.ones(len(cl), np.int8)])
        w = _check_weight(weight, len(pairs), "weight")
        if len(pairs) == 0:
            return cls(n, labels=labels)
        return cls(n, labels=labels, pairs=pairs, sign=sign, weight=w, on_conflict=on_conflict)

    @classmethod
    def from_pairs(cls, n, pairs, sign, weight=None, *, on_conflict="error", labels=None) -> SideInfo:
        """Side information from an edge list with signs (``+1`` / ``-1``)."""
        return cls(n, labels=labels, pairs=pairs, sign=sign, weight=weight, on_conflict=on_conflict)

    # ------------------------------------------------------------------ views
    @property
    def must_link(self) -> np.ndarray:
        """``(m_plus, 2)`` int32 pairs with sign +1."""
        return self.pairs[self.sign > 0]

    @property
    def cannot_link(self) -> np.ndarray:
        """``(m_minus, 2)`` int32 pairs with sign -1."""
        return self.pairs[self.sign < 0]

    @property
    def n_links(self) -> int:
        return int(len(self.pairs))

    @property
    def n_labelled(self) -> int:
        return 0 if self.labels is None else int(np.count_nonzero(self.labels >= 0))

    @property
    def has_conflicts(self) -> bool:
        """True when some pair is stored with both signs (only possible with ``on_conflict="keep"``)."""
        return bool(len(_conflicting_keys(self.pairs, self.n)))

    def degree(self) -> np.ndarray:
        """Number of links at each point, int64 ``(n,)``."""
        return np.bincount(self.pairs.ravel(), minlength=self.n)

    # ------------------------------------------------------------------ derived structures
    def links_from_labels(
        self, max_pairs=None, seed=None, *, keep_labels=False, on_conflict="error"
    ) -> SideInfo:
        """Convert the partial labels into links between labelled points.

        Every pair of labelled points becomes a must-link (same label) or a cannot-link (different
        labels). With ``max_pairs`` smaller than the ``L (L - 1) / 2`` available pairs, a uniform
        random subset of ``max_pairs`` distinct pairs is drawn **without enumerating all pairs**
        (pair indices are sampled and decoded), so the cost is O(max_pairs).

        The existing links of ``self`` are kept (merged with the new ones, ``on_conflict`` applies).
        Labels are dropped unless ``keep_labels=True`` (so that methods do not count them twice).
        """
        if self.labels is None:
            raise InvalidInputError(
                "links_from_labels needs partial labels; this SideInfo has none "
                "(build it with SideInfo.from_labels(y))."
            )
        idx = np.flatnonzero(self.labels >= 0)
        L = len(idx)
        total = L * (L - 1) // 2
        if max_pairs is not None:
            max_pairs = int(max_pairs)
            if max_pairs < 0:
                raise InvalidInputError(f"`max_pairs` must be >= 0, got {max_pairs}.")
        if max_pairs is None or max_pairs >= total:
            a, b = np.triu_indices(L, k=1)
        else:
            rng = np.random.default_rng(seed)
            k = rng.choice(total, size=max_pairs, replace=False)
            a, b = decode_pair_index(k)
        pi, pj = idx[a], idx[b]
        sign = np.where(self.labels[pi] == self.labels[pj], 1, -1).astype(np.int8)
        pairs = np.concatenate([np.stack([pi, pj], axis=1).astype(np.int64), self.pairs.astype(np.int64)])
        sign = np.concatenate([sign, self.sign])
        weight = np.concatenate([np.ones(len(pi)), self.weight])
        labels = self.labels if keep_labels else None
        if len(pairs) == 0:
            return SideInfo(self.n, labels=labels)
        return SideInfo(self.n, labels=labels, pairs=pairs, sign=sign, weight=weight, on_conflict=on_conflict)

    def neighbour_table(self, width: int | None = None) -> NeighbourTable:
        """Padded per-point adjacency table (see :class:`NeighbourTable`); O(n + m) numpy, no loops.

        ``width`` pads to a fixed number of columns (at least the maximum degree), so that tables
        of several link sets share one compiled solver.
        """
        n, m = self.n, len(self.pairs)
        src = np.concatenate([self.pairs[:, 0], self.pairs[:, 1]]).astype(np.int64)
        dst = np.concatenate([self.pairs[:, 1], self.pairs[:, 0]]).astype(np.int32)
        sgn = np.concatenate([self.sign, self.sign]).astype(np.float64)
        wgt = np.concatenate([self.weight, self.weight])
        deg = np.bincount(src, minlength=n)
        max_deg = max(int(deg.max()) if m else 0, 1, int(width or 1))
        order = np.argsort(src, kind="stable")
        src_s = src[order]
        start = np.cumsum(deg) - deg
        slot = np.arange(2 * m) - start[src_s]
        nbr_t = np.zeros((n, max_deg), np.int32)
        sgn_t = np.zeros((n, max_deg), np.float64)
        wgt_t = np.zeros((n, max_deg), np.float64)
        nbr_t[src_s, slot] = dst[order]
        sgn_t[src_s, slot] = sgn[order]
        wgt_t[src_s, slot] = wgt[order]
        return NeighbourTable(nbr_t, sgn_t, wgt_t)

    def must_link_components(self) -> np.ndarray:
        """Connected components of the must-link graph (transitive closure), int32 ``(n,)``.

        Component ids are ``0..C-1`` numbered by their smallest point index. Computed by a
        vectorised union-find (hook larger root onto smaller root, then full path compression),
        iterated until every must-link joins two points with the same root: no recursion, no
        Python loop over points or pairs.
        """
        ml = self.must_link.astype(np.int64)
        parent = np.arange(self.n, dtype=np.int64)
        if len(ml):
            i, j = ml[:, 0], ml[:, 1]
            while True:
                ri, rj = parent[i], parent[j]
                differ = ri != rj
                if not differ.any():
                    break
                lo = np.minimum(ri[differ], rj[differ])
                hi = np.maximum(ri[differ], rj[differ])
                np.minimum.at(parent, hi, lo)  # hi is a root: hook it under a smaller root
                while True:  # path compression until every node points at its root
                    gp = parent[parent]
                    if np.array_equal(gp, parent):
                        break
                    parent = gp
        _, comp = np.unique(parent, return_inverse=True)
        return comp.astype(np.int32)

    def check_hard(self) -> None:
        """Raise if the side information cannot hold as hard constraints.

        Checks, in order: a cannot-link inside a must-link component (transitive closure), two
        different labels inside one must-link component, a cannot-link between two points with the
        same label. The message names the first offending pair.
        """
        comp = self.must_link_components()
        cl = self.cannot_link
        bad = comp[cl[:, 0]] == comp[cl[:, 1]]
        if bad.any():
            i, j = (int(v) for v in cl[np.argmax(bad)])
            raise InvalidInputError(
                f"cannot-link ({i}, {j}) contradicts the must-links: the transitive "
                f"closure of "
                f"the must-links puts {i} and {j} in the same component "
                f"({int(bad.sum())} such "
                "cannot-link(s)). Remove the contradictory links or use a method that "
                "models "
                "noisy links (TVClust, RDP-means)."
            )
        if self.labels is None:
            return
        lab = self.labels
        has = lab >= 0
        if has.any():
            c, y = comp[has], lab[has]
            order = np.lexsort((y, c))
            c, y, pts = c[order], y[order], np.flatnonzero(has)[order]
            clash = (c[1:] == c[:-1]) & (y[1:] != y[:-1])
            if clash.any():
                k = int(np.argmax(clash))
                raise InvalidInputError(
                    f"points {int(pts[k])} and {int(pts[k + 1])} have different labels "
                    f"({int(y[k])} and {int(y[k + 1])}) but the must-links join them."
                )
        both = (lab[cl[:, 0]] >= 0) & (lab[cl[:, 0]] == lab[cl[:, 1]])
        if both.any():
            i, j = (int(v) for v in cl[np.argmax(both)])
            raise InvalidInputError(
                f"cannot-link ({i}, {j}) joins two points with the same label {int(lab[i])}."
            )

    # ------------------------------------------------------------------ printing / comparison
    def summary(self) -> dict:
        """Counts describing the side information (plain Python types, JSON-ready)."""
        deg = self.degree()
        labs = None if self.labels is None else self.labels[self.labels >= 0]
        return {
            "n": self.n,
            "n_labelled": self.n_labelled,
            "n_label_classes": 0 if labs is None else int(len(np.unique(labs))),
            "n_links": self.n_links,
            "n_must_link": int(np.count_nonzero(self.sign > 0)),
            "n_cannot_link": int(np.count_nonzero(self.sign < 0)),
            "n_conflicting_pairs": int(len(_conflicting_keys(self.pairs, self.n))),
            "n_linked_points": int(np.count_nonzero(deg)),
            "max_degree": int(deg.max()) if self.n_links else 0,
            "weighted": bool(self.n_links and not np.all(self.weight == 1.0)),
        }

    def __repr__(self) -> str:
        s = self.summary()
        extra = f", conflicting={s['n_conflicting_pairs']}" if s["n_conflicting_pairs"] else ""
        return (
            f"SideInfo(n={s['n']}, labelled={s['n_labelled']}, must_link={s['n_must_link']}, "
            f"cannot_link={s['n_cannot_link']}{extra})"
        )

    def __eq__(self, other) -> bool:
        if not isinstance(other, SideInfo):
            return NotImplemented
        if self.n != other.n or (self.labels is None) != (other.labels is None):
            return False
        if self.labels is not None and not np.array_equal(self.labels, other.labels):
            return False
        return (
            np.array_equal(self.pairs, other.pairs)
            and np.array_equal(self.sign, other.sign)
            and np.array_equal(self.weight, other.weight)
        )

    __hash__ = None  # mutable-looking arrays inside: not hashable


# --------------------------------------------------------------------------- helpers


class Links(NamedTuple):
    """The links as device arrays for jitted solvers: the pair list (pair counts, log joints) and the
    padded neighbour table (per-point counting in sweeps); the one link type of ppclust's solvers.

    Padded table slots have ``nbr = 0`` and ``sgn = wgt = 0``: gathers stay in range and add nothing.
    Built by :func:`make_links` from a validated :class:`SideInfo`.

    Attributes
    ----------
    pairs : array of int32 of shape (m, 2)
        The linked pairs, ``i < j`` in each row.
    sign : array of float of shape (m,)
        ``+1`` may-link, ``-1`` may-not-link.
    weight : array of float of shape (m,)
        Positive link weights.
    nbr : array of int32 of shape (n, max_deg)
        Neighbour-table indices (:attr:`NeighbourTable.nbr`).
    sgn : array of float of shape (n, max_deg)
        Neighbour-table signs, ``0`` padding.
    wgt : array of float of shape (n, max_deg)
        Neighbour-table weights, ``0`` padding.

    Examples
    --------
    >>> make_links(3, [[0, 1]], [1]).pairs.tolist()
    [[0, 1]]
    """

    pairs: object  # (m, 2) int32, i < j
    sign: object  # (m,) float, +1 may-link / -1 may-not-link
    weight: object  # (m,) float
    nbr: object  # (n, max_deg) int32
    sgn: object  # (n, max_deg) float
    wgt: object  # (n, max_deg) float


def make_links(n, pairs=None, sign=None, weight=None, *, side=None, dtype=None) -> Links:
    """Build :class:`Links` from a :class:`SideInfo` (``side``) or from pair arrays.

    Pair arrays are validated through ``SideInfo`` (``on_conflict="error"``; a pair with both signs must
    come as a ``SideInfo`` built with ``"keep"``); with no links the table has one all-padding column so
    shapes stay static. ``dtype`` defaults to JAX's current default float (float64 inside a
    ``ppclust._jax.x64()`` scope).

    Parameters
    ----------
    n : int
        Number of points.
    pairs : array-like of int of shape (m, 2), default=None
        Linked pairs; ignored when ``side`` is given. None or empty means no links.
    sign : array-like of shape (m,), default=None
        ``+1`` may-link, ``-1`` may-not-link; None makes every pair a may-link.
    weight : float or array-like of shape (m,), default=None
        Positive link weights (None: 1).
    side : SideInfo, default=None
        Validated side information to take the links from instead of the pair arrays.
    dtype : dtype, default=None
        Float type of the signs and weights; None is JAX's default float.

    Examples
    --------
    >>> links = make_links(4, [[0, 1], [2, 3]], [1, -1])
    >>> links.sign.tolist(), links.nbr.shape
    ([1.0, -1.0], (4, 1))
    """
    import jax

    dtype = jax.dtypes.canonicalize_dtype(np.float64) if dtype is None else dtype
    if side is None:
        if pairs is not None and len(pairs):
            pairs = np.asarray(pairs).reshape(-1, 2)
            sign = np.ones(len(pairs)) if sign is None else np.asarray(sign).reshape(-1)
            side = SideInfo(n, pairs=pairs, sign=sign, weight=weight)
        else:
            side = SideInfo(n)
    t = side.neighbour_table()
    # converted on the host and copied as they are: a conversion on the device would compile a program
    # for every link count
    fields = (
        (np.asarray(side.pairs).reshape(-1, 2), np.int32),
        (side.sign, dtype),
        (side.weight, dtype),
        (t.nbr, np.int32),
        (t.sgn, dtype),
        (t.wgt, dtype),
    )
    return Links(*jax.device_put([np.asarray(a, dtype=dt) for a, dt in fields]))


def pair_counts(labels, links: Links, *, xp=None):
    r"""Weighted pair counts ``[N11, N01, N10, N00]`` of a labelling (TVClust eq. 8, spec Section 0):
    may-links inside clusters, may-not-links inside, may-links across, may-not-links across. O(m).

    ``labels`` (..., n): leading axes (e.g. draws) give counts (..., 4). ``xp``: the array namespace,
    ``jax.numpy`` by default; ``numpy`` (with NumPy ``links`` fields) counts on the host without tracing.

    Parameters
    ----------
    labels : array of int of shape (..., n)
        A labelling, or a stack of labellings along leading axes.
    links : Links
        The links (pair list fields are read).
    xp : module, default=None
        Array namespace; None is ``jax.numpy``.

    Examples
    --------
    >>> import numpy as np
    >>> links = make_links(3, [[0, 1], [1, 2]], [1, -1])
    >>> pair_counts(np.array([0, 0, 1]), links).tolist()  # N11, N01, N10, N00
    [1.0, 0.0, 0.0, 1.0]
    """
    if xp is None:
        import jax.numpy as xp

    same = (labels[..., links.pairs[:, 0]] == labels[..., links.pairs[:, 1]]).astype(links.weight.dtype)
    plus = links.weight * (links.sign > 0)
    minus = links.weight * (links.sign < 0)
    return xp.stack(
        [
            (plus * same).sum(-1),
            (minus * same).sum(-1),
            (plus * (1 - same)).sum(-1),
            (minus * (1 - same)).sum(-1),
        ],
        -1,
    )


def link_counts(nb_labels, sgn, wgt, k_max: int):
    r"""Per-slot weighted friends and strangers of points from their neighbour-table rows.

    :math:`f_k = \sum_{s:\,sgn_s>0} w_s[z_{nbr_s}=k]`, :math:`s_k = \sum_{s:\,sgn_s<0} w_s[z_{nbr_s}=k]`
    (TVClust eqs. 11, 13; the RDP-means link term :math:`\xi_1 f_k - \xi_2 s_k`, spec 3.5), O(degree K)
    per point. ``nb_labels``, ``sgn``, ``wgt``: (..., max_deg) with the labels of the neighbours already
    gathered. Returns ``(f, s, F, S, hot)``: f, s (..., k_max), the totals F, S (...) (the point's weighted
    may-link and may-not-link degrees) and the one-hot comparison ``hot`` (..., max_deg, k_max).
    A one-hot comparison and a sum, not a scatter-add: XLA:CPU runs a scatter inside a per-point loop as
    a slow serial kernel.

    Parameters
    ----------
    nb_labels : array of int of shape (..., max_deg)
        Labels of each point's neighbours, gathered from its neighbour-table row.
    sgn : array of float of shape (..., max_deg)
        Link signs of the row (``0`` padding).
    wgt : array of float of shape (..., max_deg)
        Link weights of the row (``0`` padding).
    k_max : int
        Number of cluster slots counted.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> f, s, F, S, hot = link_counts(jnp.asarray([0, 1]), jnp.asarray([1.0, -1.0]), jnp.ones(2), 2)
    >>> f.tolist(), s.tolist()
    ([1.0, 0.0], [0.0, 1.0])
    """
    import jax.numpy as jnp

    hot = nb_labels[..., None] == jnp.arange(k_max, dtype=nb_labels.dtype)
    plus = jnp.where(sgn > 0, wgt, 0.0)
    minus = jnp.where(sgn < 0, wgt, 0.0)
    f = jnp.where(hot, plus[..., None], 0.0).sum(-2)
    s = jnp.where(hot, minus[..., None], 0.0).sum(-2)
    return f, s, plus.sum(-1), minus.sum(-1), hot


def table_within_counts(z, z_nbr, sgn, wgt):
    """``(N11, N01)``: weighted may-links and may-not-links inside clusters, from neighbour-table rows
    (z (r,) the rows' labels, z_nbr / sgn / wgt (r, max_deg)); every pair sits in two rows, hence 1/2.
    Summed over a subset of rows (one device's) it is that subset's share, reduced by the caller.

    Parameters
    ----------
    z : array of int of shape (r,)
        Labels of the rows' points.
    z_nbr : array of int of shape (r, max_deg)
        Labels of their neighbours (``z[table.nbr]`` for those rows).
    sgn : array of float of shape (r, max_deg)
        Link signs of the rows (``0`` padding).
    wgt : array of float of shape (r, max_deg)
        Link weights of the rows (``0`` padding).

    Examples
    --------
    >>> import numpy as np
    >>> t = SideInfo(2, pairs=[[0, 1]], sign=[1]).neighbour_table()
    >>> z = np.array([0, 0])
    >>> [float(c) for c in table_within_counts(z, z[t.nbr], t.sgn, t.wgt)]
    [1.0, 0.0]
    """
    same = (z_nbr == z[:, None]).astype(wgt.dtype)
    return 0.5 * (same * wgt * (sgn > 0)).sum(), 0.5 * (same * wgt * (sgn < 0)).sum()


def link_agreement(labels, side: SideInfo) -> float:
    r"""Weighted share of the links a labelling satisfies, :math:`(N_{11} + N_{00}) / \sum_l w_l`
    (:func:`pair_counts`: may-links inside a cluster plus may-not-links across); 1 without links.

    On links that were *not used* to fit the labelling it estimates the labelling's agreement with the
    link source: for pairs drawn independently of the fit and signs flipped at any rate
    :math:`\varepsilon < 1/2`, its expectation :math:`\varepsilon + (1 - 2\varepsilon) a` is increasing
    in the labelling's pair accuracy ``a`` on those pairs, so comparing two labellings on the same held-out
    links ranks them by pair accuracy whatever the (unknown) flip rate. Host NumPy.

    Parameters
    ----------
    labels : array-like of int of shape (n,)
        The labelling to score.
    side : SideInfo
        The links it is scored on (labels are ignored).

    Examples
    --------
    >>> import numpy as np
    >>> side = SideInfo(3, pairs=[[0, 1], [1, 2]], sign=[1, 1])
    >>> link_agreement(np.array([0, 0, 1]), side)
    0.5
    """
    if side.n_links == 0:
        return 1.0
    c = pair_counts(np.asarray(labels), side, xp=np)
    return float((c[0] + c[3]) / np.sum(side.weight))


def link_folds(side: SideInfo, n_folds: int, seed=None) -> list[tuple[SideInfo, SideInfo]]:
    """``n_folds`` (train, held-out) splits of the links of ``side`` (a random partition of the links into
    folds of sizes differing by at most one; labels are dropped). Fewer folds when there are fewer links.

    Parameters
    ----------
    side : SideInfo
        The links to split.
    n_folds : int
        Number of folds; fewer when there are fewer links, none (an empty list) under 2.
    seed : int or None, default=None
        Seed of the random fold assignment.

    Examples
    --------
    >>> side = SideInfo(4, pairs=[[0, 1], [1, 2], [2, 3], [0, 3]], sign=[1, 1, -1, -1])
    >>> [held.n_links for _, held in link_folds(side, 2, seed=0)]
    [2, 2]
    """
    m = side.n_links
    n_folds = int(min(n_folds, m))
    if n_folds < 2:
        return []
    fold = np.random.default_rng(seed).permutation(np.arange(m) % n_folds)
    out = []
    for f in range(n_folds):
        parts = []
        for keep in (fold != f, fold == f):
            parts.append(
                SideInfo.from_pairs(
                    side.n, side.pairs[keep], side.sign[keep], side.weight[keep], on_conflict="keep"
                )
            )
        out.append(tuple(parts))
    return out


def weigh_link_kinds(table: NeighbourTable, shares) -> NeighbourTable:
    """``table`` with every may-link's weight times ``shares[0]`` and every may-not-link's times
    ``shares[1]`` (:func:`ppclust.models.tvclust.link_weight_shares`; empty slots stay 0). Host arrays.

    Parameters
    ----------
    table : NeighbourTable
        The neighbour table to reweigh.
    shares : pair of float
        Factors of the may-link and of the may-not-link weights.

    Examples
    --------
    >>> t = SideInfo(2, pairs=[[0, 1]], sign=[-1]).neighbour_table()
    >>> weigh_link_kinds(t, (1.0, 0.5)).wgt[:, 0].tolist()
    [0.5, 0.5]
    """
    sgn = np.asarray(table.sgn)
    return table._replace(wgt=np.asarray(table.wgt) * np.where(sgn > 0, shares[0], shares[1]))


def link_weight_per_point(table: NeighbourTable) -> float:
    r"""Mean total link weight at a point, :math:`\tfrac1n\sum_i\sum_{j\sim i}|w_{ij}|` over the table's
    ``n`` rows (``2 * n_links / n`` for unit weights, each pair counted at both ends). A pair stored with
    both signs (soft links) counts with its net weight ``|sum sgn * wgt|``, as it acts in a cost that adds
    the two terms.

    Parameters
    ----------
    table : NeighbourTable
        A neighbour table of ``n`` rows.

    Examples
    --------
    >>> link_weight_per_point(SideInfo(4, pairs=[[0, 1]], sign=[1]).neighbour_table())
    0.5
    """
    sgn = np.asarray(table.sgn)
    n = sgn.shape[0]
    sw = sgn * np.asarray(table.wgt)
    rows, cols = np.nonzero(sgn)
    key = rows.astype(np.int64) * n + np.asarray(table.nbr)[rows, cols]
    _, pair = np.unique(key, return_inverse=True)
    return float(np.abs(np.bincount(pair.ravel(), weights=sw[rows, cols])).sum()) / n


def decode_pair_index(k):
    """Map linear indices ``k`` in ``[0, L (L - 1) / 2)`` to pairs ``(a, b)``, ``a < b``.

    The order is ``k = b (b - 1) / 2 + a`` (column-major upper triangle), exact in int64.

    Parameters
    ----------
    k : array-like of int
        Linear pair indices in ``[0, L (L - 1) / 2)``.

    Examples
    --------
    >>> a, b = decode_pair_index([0, 1, 2])
    >>> a.tolist(), b.tolist()
    ([0, 0, 1], [1, 2, 2])
    """
    k = np.asarray(k, dtype=np.int64)
    b = ((1.0 + np.sqrt(1.0 + 8.0 * k.astype(np.float64))) / 2.0).astype(np.int64)
    # correct floating-point rounding of the square root in either direction
    b = np.where(b * (b - 1) // 2 > k, b - 1, b)
    b = np.where((b + 1) * b // 2 <= k, b + 1, b)
    a = k - b * (b - 1) // 2
    return a, b


def labelled_means(x, codes, m: int) -> np.ndarray:
    """(m, d) mean of the labelled points of each label category: ``codes`` (n,) in 0..m-1, -1 =
    unlabelled (the codes of ``ppclust.inference.cecib.encode_labels``); every category must have a
    labelled point. The fixed centres of a label-seeded start (CEC-IB's / C3L's ``init="labels"``).

    Parameters
    ----------
    x : array-like of float of shape (n, d)
        Data.
    codes : array-like of int of shape (n,)
        Label category of each point in ``0..m-1``, ``-1`` unlabelled.
    m : int
        Number of label categories; each must have a labelled point.

    Examples
    --------
    >>> import numpy as np
    >>> labelled_means(np.array([[0.0], [2.0], [5.0]]), np.array([0, 0, -1]), 1).tolist()
    [[1.0]]
    """
    x = np.asarray(x, np.float64)
    codes = np.asarray(codes)
    lab = codes >= 0
    counts = np.bincount(codes[lab], minlength=m)[:, None]
    sums = np.zeros((m, x.shape[1]))
    np.add.at(sums, codes[lab], x[lab])
    return sums / counts


def check_labels(y, n=None, name="labels") -> np.ndarray:
    """Validate partial labels: 1-D integers >= -1 (``-1`` = unlabelled), length ``n``; int32 copy.

    Parameters
    ----------
    y : array-like of shape (n,)
        Labels: integers, or integer-valued floats, ``>= -1``.
    n : int, default=None
        Required length; None accepts any.
    name : str, default="labels"
        Argument name used in error messages.

    Examples
    --------
    >>> check_labels([0, -1, 2.0]).tolist()
    [0, -1, 2]
    """
    if y is None:
        raise InvalidInputError(f"`{name}` must be an array of integer labels, got None.")
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise InvalidInputError(f"`{name}` must be 1-D of shape (n_samples,), got shape {arr.shape}.")
    if arr.dtype == bool or arr.dtype.kind not in "iu":
        # integer-valued floats (pandas columns with -1.0, or y read from CSV) are labels too
        if arr.dtype.kind == "f" and np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise InvalidInputError(
                f"`{name}` must hold integers (-1 = unlabelled), got dtype {arr.dtype} "
                "(Unknown label type); encode classes as 0..K-1, e.g. with "
                "np.unique(y, return_inverse=True)."
            )
    if n is not None and len(arr) != n:
        raise InvalidInputError(f"`{name}` has length {len(arr)} but n_samples={n}.")
    if arr.size and arr.min() < -1:
        bad = int(np.flatnonzero(arr < -1)[0])
        raise InvalidInputError(
            f"`{name}` must be >= -1 (-1 = unlabelled); got {int(arr[bad])} at index {bad}."
        )
    if arr.size and arr.max() > np.iinfo(np.int32).max:
        raise InvalidInputError(f"`{name}` has labels that do not fit in int32 (max {int(arr.max())}).")
    return arr.astype(np.int32, copy=True)


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise InvalidInputError(f"`n` (number of points) must be an int, got {type(n).__name__}.")
    if n < 1:
        raise InvalidInputError(f"`n` (number of points) must be >= 1, got {n}.")
    if n > np.iinfo(np.int32).max:
        raise InvalidInputError(f"`n`={n} does not fit in int32.")
    return int(n)


class RowPairs:
    """Pairs of row indices that travel with the rows of ``X`` through cross-validation.

    scikit-learn's model selection (``GridSearchCV``, ``cross_validate``) slices every fit parameter
    whose length is ``n_samples`` with each fold's row indices, and passes anything else through
    unchanged. A plain ``(n_pairs, 2)`` array of links is therefore handed to every fold as it is,
    with indices into the *full* data set: wrong rows, or out of range. A ``RowPairs`` has length
    ``n_samples``, so it is sliced like ``X``: ``pairs[rows]`` keeps the pairs whose two points are
    both in ``rows``, re-indexed to positions in ``rows``; pairs crossing the fold are dropped.

    Wherever ppclust takes ``must_link`` / ``cannot_link``, a ``RowPairs`` is accepted in place of the
    array (its ``n_samples`` must equal ``X``'s). See ``ppclust.estimators._base`` ("Side information in
    cross-validation") for the whole recipe with metadata routing.

    Parameters
    ----------
    pairs : array-like of int of shape (n_pairs, 2)
        Point indices in ``[0, n_samples)``.
    n_samples : int
        Number of rows of the ``X`` the indices refer to.

    Examples
    --------
    >>> rp = RowPairs([(0, 1), (2, 3)], 4)
    >>> len(rp), rp[[2, 3]].pairs.tolist()  # a fold of rows 2 and 3 keeps one pair, re-indexed
    (4, [[0, 1]])
    """

    def __init__(self, pairs, n_samples):
        n = _check_n(n_samples)
        self.pairs = _check_pairs(pairs, n, "pairs")
        self.n_samples = n

    @property
    def shape(self) -> tuple[int]:
        return (self.n_samples,)

    def __len__(self) -> int:
        return self.n_samples

    def __getitem__(self, rows) -> RowPairs:
        """The pairs among ``rows`` (int positions, a boolean mask or a slice), re-indexed to them."""
        if isinstance(rows, tuple):  # scikit-learn's _safe_indexing asks for pairs[rows, ...]
            rows = rows[0]
        pos = np.arange(self.n_samples)[rows]
        if pos.ndim != 1:
            raise IndexError(f"RowPairs takes a 1-D row selection, got shape {pos.shape}.")
        new = np.full(self.n_samples, -1, np.int64)
        new[pos[::-1]] = np.arange(len(pos))[::-1]  # a repeated row maps to its first position
        mapped = new[self.pairs] if len(self.pairs) else np.zeros((0, 2), np.int64)
        keep = (mapped >= 0).all(axis=1)
        out = RowPairs.__new__(RowPairs)
        out.pairs, out.n_samples = mapped[keep], int(len(pos))
        return out

    def __repr__(self) -> str:
        return f"RowPairs({len(self.pairs)} pairs, n_samples={self.n_samples})"


def _check_pairs(pairs, n, name) -> np.ndarray:
    if isinstance(pairs, RowPairs):
        if pairs.n_samples != n:
            raise InvalidInputError(
                f"`{name}` is a RowPairs for n_samples={pairs.n_samples}, but the data "
                f"have "
                f"n_samples={n}; build it for the rows of X."
            )
        pairs = pairs.pairs
    arr = np.asarray(pairs)
    if arr.size == 0:
        return np.zeros((0, 2), np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InvalidInputError(f"`{name}` must have shape (n_pairs, 2), got shape {arr.shape}.")
    if arr.dtype == bool or arr.dtype.kind not in "iu":
        raise InvalidInputError(f"`{name}` must hold integer point indices, got dtype {arr.dtype}.")
    arr = arr.astype(np.int64)
    out = (arr < 0) | (arr >= n)
    rows = out.any(axis=1)
    if rows.any():
        first = tuple(int(v) for v in arr[np.argmax(rows)])
        raise InvalidInputError(
            f"`{name}` has {int(rows.sum())} pair(s) with an index outside [0, "
            f"n_samples={n}) "
            f"(first: {first}); indices must lie in [0, n_samples)."
        )
    selfp = arr[:, 0] == arr[:, 1]
    if selfp.any():
        first = tuple(int(v) for v in arr[np.argmax(selfp)])
        raise InvalidInputError(
            f"`{name}` has {int(selfp.sum())} self-pair(s) (first: {first}); a point "
            f"cannot be "
            "linked to itself."
        )
    return arr


def _check_sign(sign, m) -> np.ndarray:
    s = np.asarray(sign)
    if s.ndim == 0:
        s = np.full(m, s)
    if s.shape != (m,):
        raise InvalidInputError(f"`sign` must have shape ({m},) to match `pairs`, got shape {s.shape}.")
    if s.dtype == bool or s.dtype.kind not in "iuf":
        raise InvalidInputError(f"`sign` must hold +1 / -1 numbers, got dtype {s.dtype}.")
    ok = (s == 1) | (s == -1)
    if not ok.all():
        k = int(np.argmax(~ok))
        raise InvalidInputError(
            f"`sign` must be +1 (may-link) or -1 (may-not-link); got {s[k]!r} at position {k}."
        )
    return s.astype(np.int8)


def _check_weight(weight, m, name) -> np.ndarray:
    if weight is None:
        return np.ones(m, np.float64)
    w = np.asarray(weight)
    if w.dtype == bool or w.dtype.kind not in "iuf":
        raise InvalidInputError(f"`{name}` must be numeric, got dtype {w.dtype}.")
    w = w.astype(np.float64)
    if w.ndim == 0:
        w = np.full(m, float(w))
    if w.shape != (m,):
        raise InvalidInputError(
            f"`{name}` must be a scalar or have shape ({m},) (one weight per link), got shape {w.shape}."
        )
    if not (np.all(np.isfinite(w)) and np.all(w > 0)):
        k = int(np.argmax(~(np.isfinite(w) & (w > 0))))
        raise InvalidInputError(f"`{name}` must be finite and > 0; got {w[k]!r} at position {k}.")
    return w


def _conflicting_keys(pairs, n) -> np.ndarray:
    """Keys ``i * n + j`` of pairs stored more than once (only with opposite signs after merging)."""
    if len(pairs) == 0:
        return np.zeros(0, np.int64)
    key = pairs[:, 0].astype(np.int64) * n + pairs[:, 1]
    u, c = np.unique(key, return_counts=True)
    return u[c > 1]


def _canonical(pairs, sign, weight, n, on_conflict):
    """Sort, orient ``i < j``, merge same-sign duplicates (max weight), handle conflicts."""
    if on_conflict not in _CONFLICT_OPTIONS:
        raise InvalidInputError(f"`on_conflict` must be one of {_CONFLICT_OPTIONS}, got {on_conflict!r}.")
    lo = np.minimum(pairs[:, 0], pairs[:, 1]).astype(np.int64)
    hi = np.maximum(pairs[:, 0], pairs[:, 1]).astype(np.int64)
    key = (lo * n + hi) * 2 + (sign > 0)
    ukey, inv = np.unique(key, return_inverse=True)
    w = np.zeros(len(ukey), np.float64)
    np.maximum.at(w, inv, weight)
    pkey = ukey // 2
    p = np.stack([pkey // n, pkey % n], axis=1).astype(np.int32)
    s = np.where(ukey % 2 == 1, 1, -1).astype(np.int8)
    if on_conflict == "error":
        dup = np.flatnonzero(pkey[1:] == pkey[:-1])
        if len(dup):
            first = tuple(int(v) for v in p[dup[0]])
            raise ConflictingLinksError(
                f"{len(dup)} pair(s) are given both as may-link (+1) and may-not-link (-1) (first: {first}). "
                "Remove the contradiction, or pass on_conflict='keep' to keep both signs (for methods that "
                "model noisy links, e.g. TVClust, RDPMeans).",
                n_pairs=len(dup),
                first=first,
            )
    return p, s, w
