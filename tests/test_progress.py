"""Progress bars: shown only when someone can see them, warm-up and sampling as separate phases, the same
draws with or without a bar, messages through logging."""

from __future__ import annotations

import logging
import sys
import types

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ppclust import _progress


@pytest.fixture
def quiet_env(monkeypatch):
    monkeypatch.delenv("PPCLUST_PROGRESS", raising=False)
    monkeypatch.delenv("CI", raising=False)
    return monkeypatch


class _TTY:
    def __init__(self, tty):
        self.tty = tty

    def isatty(self):
        return self.tty

    def write(self, s):
        return len(s)

    def flush(self):
        pass


def test_policy_terminal_ci_pipe_and_overrides(quiet_env):
    mp = quiet_env
    mp.setattr(sys, "stderr", _TTY(True))
    assert _progress.enabled(True)
    assert not _progress.enabled(False)
    mp.setenv("CI", "true")
    assert not _progress.enabled(True)
    mp.setenv("PPCLUST_PROGRESS", "1")  # forced on, even in CI and into a pipe
    mp.setattr(sys, "stderr", _TTY(False))
    assert _progress.enabled(True)
    assert not _progress.enabled(False)  # the estimator's False always wins
    mp.setenv("PPCLUST_PROGRESS", "0")
    mp.delenv("CI")
    mp.setattr(sys, "stderr", _TTY(True))
    assert not _progress.enabled(True)
    mp.delenv("PPCLUST_PROGRESS")
    mp.setattr(sys, "stderr", _TTY(False))  # a pipe, a log file
    assert not _progress.enabled(True)


def test_policy_jupyter_kernel_counts_as_interactive(quiet_env):
    mp = quiet_env
    mp.setattr(sys, "stderr", _TTY(False))  # a kernel's stderr is no TTY
    shell = types.SimpleNamespace(kernel=object())
    mp.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    assert _progress.enabled(True)
    terminal_ipython = types.SimpleNamespace()  # IPython in a terminal: no kernel, no TTY here
    mp.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: terminal_ipython))
    assert not _progress.enabled(True)
    mp.setenv("CI", "1")
    mp.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    assert not _progress.enabled(True)  # notebooks executed in CI stay quiet


def test_bar_logs_through_the_ppclust_logger(quiet_env, caplog):
    with caplog.at_level(logging.INFO, logger="ppclust"), _progress.bar(3, "thing", "step", False) as bar:
        bar.update(2)
        bar.update(1)
    rec = [r for r in caplog.records if r.name == "ppclust"]
    assert len(rec) == 1 and rec[0].getMessage().startswith("thing: 3 step in ")


def _tiny_problem():
    from ppclust.families import GaussianNIW
    from ppclust.models.tvclust import TVClustPrior, make_links

    with jax.enable_x64(True):
        x = jnp.asarray(np.array([[0.0, 0.1], [0.2, -0.1], [3.0, 3.1], [3.2, 2.9], [0.1, 0.0], [2.9, 3.0]]))
        fam = GaussianNIW(jnp.zeros(2), jnp.asarray(1.0), jnp.asarray(4.0), jnp.eye(2))
        links = make_links(6, np.array([[0, 1], [2, 3], [0, 2]]), np.array([1, 1, -1]))
    return x, fam, links, TVClustPrior()


def test_gibbs_bars_show_two_phases_and_do_not_change_the_draws(quiet_env, capsys):
    from ppclust.inference import gibbs

    x, fam, links, prior = _tiny_problem()
    kw = dict(n_draws=5, n_warmup=7, n_chains=2, thin=2, k_max=6, pq="collapse", backend="xla")
    with jax.enable_x64(True):
        off = gibbs.sample(jax.random.key(4), x, links, fam, prior, progress_bar=False, **kw)
        capsys.readouterr()
        quiet_env.setenv("PPCLUST_PROGRESS", "1")
        # chunks of 2 draws: 3 calls with a surplus draw, warm-up in 4 pieces of 2 sweeps + its own bar
        on = gibbs.sample(
            jax.random.key(4), x, links, fam, prior, progress_bar=True, chunk=2, desc="tv", **kw
        )
    err = capsys.readouterr().err
    assert "tv warm-up" in err and "7/7" in err
    assert "tv sampling" in err and "10/10" in err
    assert err.index("tv warm-up") < err.index("tv sampling")
    for field in ("labels", "n_clusters", "log_joint", "p", "q", "alpha"):
        np.testing.assert_array_equal(getattr(on, field), getattr(off, field), err_msg=field)
    assert on.labels.shape == (2, 5, 6)


def test_every_long_running_estimator_takes_progress_bar():
    import ppclust

    for name in ("TVClust", "SemiSupervisedGMM", "BayesianSemiSupervisedGMM", "CECIB", "C3L", "CCIB", "SMIC"):
        est = getattr(ppclust, name)()
        assert est.get_params()["progress_bar"] is True, name
        assert est.set_params(progress_bar=False).progress_bar is False


def test_smic_bar_counts_model_selection_candidates(quiet_env, capsys):
    from ppclust import SMIC

    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 5])
    quiet_env.setenv("PPCLUST_PROGRESS", "1")
    est = SMIC(n_clusters=2, n_neighbors=5, gamma="auto", eta=0.0, random_state=0).fit(
        X, must_link=[[0, 1]], cannot_link=[[0, 25]]
    )
    err = capsys.readouterr().err
    n = len(est.selection_)
    assert "SMIC model selection" in err and f"{n}/{n}" in err
    capsys.readouterr()
    SMIC(n_clusters=2, n_neighbors=5, gamma="auto", eta=0.0, random_state=0, progress_bar=False).fit(
        X, must_link=[[0, 1]], cannot_link=[[0, 25]]
    )
    assert "SMIC" not in capsys.readouterr().err
