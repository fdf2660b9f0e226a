r"""Stability of a fit across seeds and prior settings: one call, one report.

:func:`stability_report` refits an estimator once per seed (and per prior setting) and compares the runs
with the library's own summaries: the number of clusters of each run (for a sampler, the posterior mean
and 95% interval of its draws' ``n_clusters``), the adjusted Rand index between the runs' point estimates
(:func:`ppclust.metrics.ari`), whether each run's point estimate lies in every other run's credible ball
(the fitted ``credible_ball_``, :func:`ppclust.partition.credible_ball`) and the split R-hat and bulk ESS of
the number of clusters over all chains of all runs of a setting
(:func:`ppclust.posterior.convergence_diagnostics`). The runs of one setting target one posterior, so they
must agree; runs of different settings differ in the model, so their disagreement measures how much the
result depends on the prior rather than convergence.

A setting is *stable* when, within each setting, the R-hat of the number of clusters is at most
:data:`ppclust.posterior.RHAT_MAX`, its bulk ESS is at least :data:`ppclust.posterior.ESS_MIN` (when
finite), the lowest pairwise ARI is at least ``ari_min`` and every run's estimate lies in every other run's
credible ball (ball distances :func:`ppclust.partition.losses_to_draws` under the ball's own loss).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field

import numpy as np

__all__ = ["StabilityReport", "stability_report", "ARI_MIN"]

#: Lowest ARI between two runs' point estimates of one setting for the runs to count as agreeing.
ARI_MIN = 0.9


@dataclass
class StabilityReport:
    """Runs of one estimator across seeds and prior settings, compared (the result of
    :func:`stability_report`).

    Attributes
    ----------
    seeds : ndarray of shape (R,)
        Seed (``random_state``) of each run.
    settings : list of dict
        The distinct prior settings (parameter dicts); ``[{}]`` when none was given.
    setting_index : ndarray of shape (R,)
        Index into ``settings`` of each run.
    n_clusters : ndarray of shape (R,)
        Clusters in each run's point estimate (``labels_``).
    k_mean, k_low, k_high : ndarray of shape (R,)
        Posterior mean and 2.5% / 97.5% quantiles of the number of clusters over each run's draws; NaN for
        an estimator without draws.
    ari : ndarray of shape (R, R)
        Adjusted Rand index between the runs' point estimates (:func:`ppclust.metrics.ari`).
    ball_distance : ndarray of shape (R, R)
        ``ball_distance[i, j]``: distance of run ``i``'s estimate to run ``j``'s estimate under the loss of
        run ``j``'s credible ball; NaN where run ``j`` has no ball.
    ball_radius : ndarray of shape (R,)
        Radius of each run's credible ball (NaN without one).
    ball_prob : float
        Posterior mass of the balls (NaN without any).
    r_hat, ess_bulk : float
        Split R-hat and bulk ESS of the number of clusters over every chain of every run; NaN when there
        are fewer than two chains in all or no draws. With several settings this mixes posteriors:
        ``r_hat_setting`` is the convergence check.
    r_hat_setting, ess_setting : ndarray of shape (len(settings),)
        The same over the chains of the runs of each setting.
    convergence_warnings : list of str
        The :class:`~ppclust.errors.ConvergenceWarning` each run's ``fit`` raised (empty string: none);
        the report records them instead of repeating them.
    stable : bool
        Whether every setting passes the checks of the module docstring.
    verdict : str
        The outcome in one sentence, with the numbers that decided it and what to do.
    ari_min : float
        The ARI threshold used.
    estimators : list
        The fitted estimators, one per run.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import DPMeans
    >>> from ppclust.stability import stability_report
    >>> X = np.r_[np.zeros((10, 2)), np.full((10, 2), 6.0)] + np.random.default_rng(0).normal(size=(20, 2))
    >>> rep = stability_report(DPMeans(), X, seeds=(0, 1))
    >>> rep.n_clusters.tolist(), float(rep.ari[0, 1]), rep.stable
    ([2, 2], 1.0, True)
    >>> rep.to_frame()["n_clusters"].tolist()
    [2, 2]
    """

    seeds: np.ndarray
    settings: list
    setting_index: np.ndarray
    n_clusters: np.ndarray
    k_mean: np.ndarray
    k_low: np.ndarray
    k_high: np.ndarray
    ari: np.ndarray
    ball_distance: np.ndarray
    ball_radius: np.ndarray
    ball_prob: float
    r_hat: float
    ess_bulk: float
    r_hat_setting: np.ndarray
    ess_setting: np.ndarray
    convergence_warnings: list
    stable: bool
    verdict: str
    ari_min: float = ARI_MIN
    estimators: list = field(default_factory=list, repr=False)

    @property
    def in_ball(self) -> np.ndarray:
        """``(R, R)`` bool: run ``i``'s estimate lies in run ``j``'s credible ball (False without a ball)."""
        with np.errstate(invalid="ignore"):
            return self.ball_distance <= self.ball_radius[None, :] + 1e-12

    @property
    def labels(self) -> list[str]:
        """A short name per run: ``"seed 0"``, or ``"setting 1, seed 0"`` with several settings."""
        many = len(self.settings) > 1
        return [
            (f"setting {p}, " if many else "") + f"seed {s}"
            for p, s in zip(self.setting_index.tolist(), self.seeds.tolist(), strict=True)
        ]

    def to_frame(self) -> dict:
        """One row per run as a dict of equal-length arrays (``pandas.DataFrame(report.to_frame())``).

        Returns
        -------
        dict of str to ndarray of shape (R,)
            ``run``, ``seed``, ``setting`` (JSON of the parameters), ``n_clusters``, ``k_mean``, ``k_low``,
            ``k_high``, ``min_ari`` (lowest ARI to another run of the same setting, NaN alone),
            ``in_every_ball`` (inside every other same-setting run's ball) and ``convergence_warning``.
        """
        R = self.seeds.size
        same = self.setting_index[:, None] == self.setting_index[None, :]
        other = same & ~np.eye(R, dtype=bool)
        min_ari = np.array([self.ari[i, other[i]].min() if other[i].any() else np.nan for i in range(R)])
        has_ball = np.isfinite(self.ball_radius)
        every = np.array([bool(np.all(self.in_ball[i, other[i] & has_ball])) for i in range(R)])
        return {
            "run": np.array(self.labels),
            "seed": self.seeds.copy(),
            "setting": np.array([json.dumps(self.settings[p], default=str) for p in self.setting_index]),
            "n_clusters": self.n_clusters.copy(),
            "k_mean": self.k_mean.copy(),
            "k_low": self.k_low.copy(),
            "k_high": self.k_high.copy(),
            "min_ari": min_ari,
            "in_every_ball": every,
            "convergence_warning": np.array([bool(w) for w in self.convergence_warnings]),
        }

    def plot(self, ax=None):
        """The number of clusters per run and the pairwise ARI (:func:`ppclust.plot.plot_stability`).

        Parameters
        ----------
        ax : matplotlib Axes or sequence of two Axes, optional
            One Axes: the number of clusters only; two: both panels; default a new pyplot figure.

        Returns
        -------
        matplotlib Axes or ndarray of two Axes
        """
        from ppclust.plot import plot_stability

        return plot_stability(self, ax=ax)

    def __str__(self):
        head = f"{'run':24s} {'K':>3s} {'K mean':>7s} {'95% interval':>13s} {'min ARI':>8s} {'in balls':>8s}"
        rows = [self.verdict, head]
        frame = self.to_frame()
        for i in range(self.seeds.size):
            interval = f"[{self.k_low[i]:g}, {self.k_high[i]:g}]" if np.isfinite(self.k_low[i]) else "-"
            rows.append(
                f"{frame['run'][i]:24s} {self.n_clusters[i]:3d} {self.k_mean[i]:7.3g} {interval:>13s} "
                f"{frame['min_ari'][i]:8.3f} {'yes' if frame['in_every_ball'][i] else 'no':>8s}"
            )
        return "\n".join(rows)


def stability_report(estimator, X, y=None, *, seeds=(0, 1, 2), priors=None, ari_min=ARI_MIN, **side_info):
    """Refit ``estimator`` per seed and prior setting and report whether the runs agree.

    Parameters
    ----------
    estimator : ppclust estimator with ``random_state``
        Cloned for every run (unfitted or fitted; its own fit is not used). Samplers
        (:class:`~ppclust.TVClust`, :class:`~ppclust.BayesianSemiSupervisedGMM`) add their posteriors to the
        report: the number of clusters' draws, the credible balls and the R-hat over chains.
    X : array-like of shape (n, d)
        The data.
    y : array-like of shape (n,), optional
        Partial labels, passed to ``fit`` as its second argument.
    seeds : sequence of int, default=(0, 1, 2)
        One run per seed and setting, ``random_state=seed``; at least two runs in all.
    priors : sequence of dict, optional
        Prior settings, each a dict of estimator parameters (``[{"kappa0": 0.01}, {"kappa0": 1.0}]``);
        default one setting, the estimator's own.
    ari_min : float in [0, 1], default=ARI_MIN
        Lowest ARI between two runs of one setting that counts as agreement.
    **side_info
        Keyword arguments of ``fit`` (``must_link``, ``cannot_link``, ``partial_labels``), the same for
        every run.

    Returns
    -------
    StabilityReport
        Per-run numbers, pairwise ARI and ball distances, R-hat and the verdict.

    Raises
    ------
    ValueError
        When the estimator has no ``random_state``, or there are fewer than two runs.

    Notes
    -----
    The ``ConvergenceWarning`` a run's ``fit`` raises is recorded in ``convergence_warnings`` rather than
    shown: the report's verdict covers it. Time: one fit per run, plus O(R^2 n) for the ARIs and ball
    distances.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import DPMeans
    >>> from ppclust.stability import stability_report
    >>> X = np.r_[np.zeros((10, 2)), np.full((10, 2), 6.0)] + np.random.default_rng(0).normal(size=(20, 2))
    >>> rep = stability_report(DPMeans(), X, seeds=(0,), priors=[{"lam": None}, {"lam": 200.0}])
    >>> rep.n_clusters.tolist()
    [2, 1]
    >>> rep.verdict.split(":")[0]
    'prior-sensitive'
    """
    from sklearn.base import clone

    from ppclust.errors import ConvergenceWarning

    if "random_state" not in estimator.get_params():
        raise ValueError(f"{type(estimator).__name__} has no random_state: every seed would give one fit")
    settings = [dict(p) for p in priors] if priors is not None else [{}]
    seeds = [int(s) for s in seeds]
    if not settings or not seeds or len(settings) * len(seeds) < 2:
        raise ValueError(
            f"need at least two runs to compare, got {len(seeds)} seed(s) x {len(settings)} setting(s)"
        )
    if not 0.0 <= float(ari_min) <= 1.0:
        raise ValueError(f"`ari_min` must lie in [0, 1], got {ari_min!r}")
    fitted, seed_of, index, caught = [], [], [], []
    for p, setting in enumerate(settings):
        for seed in seeds:
            est = clone(estimator).set_params(**setting, random_state=seed)
            with warnings.catch_warnings(record=True) as record:
                warnings.simplefilter("always", ConvergenceWarning)
                if y is None:
                    est.fit(X, **side_info)
                else:
                    est.fit(X, y, **side_info)
            for w in record:  # anything but the convergence check goes on to the caller
                if not issubclass(w.category, ConvergenceWarning):
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            caught.append(
                "; ".join(str(w.message) for w in record if issubclass(w.category, ConvergenceWarning))
            )
            fitted.append(est)
            seed_of.append(seed)
            index.append(p)
    return _compare(fitted, np.array(seed_of), settings, np.array(index), caught, float(ari_min))


def _k_draws(est):
    """The draws of the number of clusters, (chain, draw), or None."""
    post = getattr(est, "posterior_", None)
    if post is None or "posterior" not in post.children or "n_clusters" not in post["posterior"].ds:
        return None
    return np.asarray(post["posterior"]["n_clusters"].values, np.float64)


def _ball(est):
    """The fitted credible ball, or one computed from the saved partition draws, or None."""
    from ppclust import partition, posterior

    ball = getattr(est, "credible_ball_", None)
    if ball is not None:
        return ball
    post = getattr(est, "posterior_", None)
    if post is not None and "partition_draws" in post.children:
        return partition.credible_ball(est.labels_, posterior.partition_draws(post))
    return None


def _pooled(draws):
    """(r_hat, ess_bulk) of the number of clusters over the chains of several runs."""
    from ppclust import posterior

    draws = [k for k in draws if k is not None]
    if not draws:
        return float("nan"), float("nan")
    length = min(k.shape[1] for k in draws)
    chains = np.concatenate([k[:, :length] for k in draws])
    diag = posterior.convergence_diagnostics(
        posterior.build_datatree({"n_clusters": chains}), ("n_clusters",)
    )
    return diag.get("n_clusters", (float("nan"), float("nan")))


def _compare(fitted, seeds, settings, index, caught, ari_min) -> StabilityReport:
    from ppclust import metrics, partition

    R = len(fitted)
    labels = [np.asarray(e.labels_) for e in fitted]
    k_draws = [_k_draws(e) for e in fitted]
    nan = np.full(R, np.nan)
    k_mean, k_low, k_high = nan.copy(), nan.copy(), nan.copy()
    for i, k in enumerate(k_draws):
        if k is not None:
            k_mean[i] = k.mean()
            k_low[i], k_high[i] = np.quantile(k, [0.025, 0.975])
    ari = np.array([[metrics.ari(labels[i], labels[j]) for j in range(R)] for i in range(R)])
    balls = [_ball(e) for e in fitted]
    radius = np.array([b.epsilon if b is not None else np.nan for b in balls])
    distance = np.full((R, R), np.nan)
    for j, b in enumerate(balls):
        if b is not None:
            distance[:, j] = partition.losses_to_draws(b.estimate, np.stack(labels), b.loss, a=b.a)
    probs = [b.prob for b in balls if b is not None]
    r_hat, ess = _pooled(k_draws)
    per = [_pooled([k_draws[i] for i in np.flatnonzero(index == p)]) for p in range(len(settings))]
    report = StabilityReport(
        seeds=seeds,
        settings=settings,
        setting_index=index,
        n_clusters=np.array([len(np.unique(lab)) for lab in labels]),
        k_mean=k_mean,
        k_low=k_low,
        k_high=k_high,
        ari=ari,
        ball_distance=distance,
        ball_radius=radius,
        ball_prob=float(probs[0]) if probs else float("nan"),
        r_hat=float(r_hat),
        ess_bulk=float(ess),
        r_hat_setting=np.array([r for r, _ in per], np.float64),
        ess_setting=np.array([e for _, e in per], np.float64),
        convergence_warnings=list(caught),
        stable=True,
        verdict="",
        ari_min=ari_min,
        estimators=list(fitted),
    )
    report.stable, report.verdict = _verdict(report)
    return report


def _worst_pair(ari, mask):
    """``(i, j)``: the pair of runs with the lowest ARI among the pairs ``mask`` marks (the first on ties)."""
    return np.unravel_index(np.argmin(np.where(mask, ari, np.inf)), ari.shape)


def _verdict(rep) -> tuple[bool, str]:
    """(stable, sentence): the checks of the module docstring within settings, then across settings."""
    from ppclust.posterior import ESS_MIN, RHAT_MAX

    names = rep.labels
    same = rep.setting_index[:, None] == rep.setting_index[None, :]
    off = ~np.eye(rep.seeds.size, dtype=bool)
    problems = []
    for p in range(len(rep.settings)):
        where = f" (setting {p})" if len(rep.settings) > 1 else ""
        r, e = rep.r_hat_setting[p], rep.ess_setting[p]
        if r > RHAT_MAX:
            problems.append(f"split R-hat of K {r:.3g} > {RHAT_MAX}{where}")
        if np.isfinite(e) and e < ESS_MIN:
            problems.append(f"bulk ESS of K {e:.3g} < {ESS_MIN:g}{where}")
    pairs = same & off
    if pairs.any():
        i, j = _worst_pair(rep.ari, pairs)
        if rep.ari[i, j] < rep.ari_min:
            problems.append(
                f"point estimates disagree (ARI {rep.ari[i, j]:.3g} between {names[i]} and {names[j]})"
            )
        outside = pairs & np.isfinite(rep.ball_radius)[None, :] & ~rep.in_ball
        if outside.any():
            i, j = np.argwhere(outside)[0]
            problems.append(
                f"{int(outside.sum())} estimate(s) outside another run's {rep.ball_prob:.0%} credible ball "
                f"(e.g. {names[i]} in {names[j]}'s)"
            )
    if problems:
        sampler = np.isfinite(rep.k_mean).any()
        advice = (
            "Run more sweeps (n_warmup, n_draws), more chains or another start (TVClust: "
            "algorithm='subcluster'), and check again."
            if sampler
            else "Raise the restarts (n_init) or revisit the parameters, and check again."
        )
        return False, "unstable: " + "; ".join(problems) + ". " + advice
    k = ", ".join(str(v) for v in np.unique(rep.n_clusters).tolist())
    if len(rep.settings) > 1:
        across = ~same
        i, j = _worst_pair(rep.ari, across)
        if rep.ari[i, j] < rep.ari_min:
            return True, (
                f"prior-sensitive: the runs of each setting agree, but the settings do not (ARI "
                f"{rep.ari[i, j]:.3g} between {names[i]} and {names[j]}; K of the estimates: {k}); the "
                "result depends on the prior."
            )
    low = float(np.min(rep.ari[off])) if off.any() else 1.0
    rhat = (
        f", split R-hat of K {np.nanmax(rep.r_hat_setting):.3g}"
        if np.isfinite(rep.r_hat_setting).any()
        else ""
    )
    warned = sum(bool(w) for w in rep.convergence_warnings)
    note = (
        f" {warned} of {rep.seeds.size} fits warned about their own chains (convergence_warnings)."
        if warned
        else ""
    )
    return True, f"stable: {rep.seeds.size} runs agree (K {k}, lowest ARI {low:.3g}{rhat}).{note}"
