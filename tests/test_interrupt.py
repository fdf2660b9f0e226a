"""Interruptible fits: SIGINT during a fit raises ``KeyboardInterrupt`` promptly, leaves the estimator
unfitted and the process usable (:func:`ppclust._progress.interruptible`, applied by ``fit_context``).

The fast tests send real signals to this process at chosen points (from a host callback of a running
program, or right after a driver dispatches one), so they do not depend on timing. The slow tests start a
child process per estimator on data whose fit lasts well over the bound, send SIGINT while it runs and
expect the child's ``KeyboardInterrupt`` within ``ANSWER_S``; another interrupts a Jupyter kernel.
"""

from __future__ import annotations

import os
import signal
import textwrap
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn.base import BaseEstimator

from ppclust import _progress
from ppclust.estimators._base import fit_context
from ppclust.inference import _callback
from tests._interrupt_child import ESTIMATORS, interrupt_child

#: seconds a child (or a kernel) may take to answer SIGINT with KeyboardInterrupt (generous to a loaded
#: machine; the contract is about a second)
ANSWER_S = 2.0

pytestmark = pytest.mark.skipif(
    signal.getsignal(signal.SIGINT) is not signal.default_int_handler or os.name != "posix",
    reason="needs POSIX signals and Python's default SIGINT handler",
)


def _sigint():
    os.kill(os.getpid(), signal.SIGINT)


def test_handler_installed_for_the_block_and_restored():
    with _progress.interruptible():
        assert signal.getsignal(signal.SIGINT) is not signal.default_int_handler
        with _progress.interruptible():  # nested: the outer handler stays
            inner = signal.getsignal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is inner
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert not _progress.stop_requested()


def test_sigint_outside_a_program_raises_at_once_and_a_swallowed_one_at_the_end():
    with pytest.raises(KeyboardInterrupt), _progress.interruptible():
        _sigint()
        time.sleep(5)  # not reached: the handler raises at once
    with pytest.raises(KeyboardInterrupt), _progress.interruptible():
        try:
            _sigint()
            time.sleep(5)
        except KeyboardInterrupt:
            pass  # swallowed (as a garbage-collector callback would): raised again when the block ends
    assert not _progress.stop_requested()


def test_sigint_inside_a_program_lets_it_run_out_then_raises():
    """A program of 40 host callbacks; the first sends SIGINT. The fit's thread raises only once the
    program is done, and the callbacks after the request do not run their host function."""
    ran = []

    def host(a):
        ran.append(1)
        if len(ran) == 1:
            _sigint()
        time.sleep(0.05)
        return (np.asarray(a) + 1,)

    @jax.jit
    def loop(a):
        body = lambda i, a: _callback.call(host, (jax.ShapeDtypeStruct((3,), jnp.int32),), (a,))[0]
        return jax.lax.fori_loop(0, 40, body, a)

    with pytest.raises(KeyboardInterrupt), _progress.interruptible():
        _progress.run(loop, jnp.zeros(3, jnp.int32))
    assert len(ran) <= 3  # the request is seen within a poll; the rest of the program skips the host
    assert not _progress.stop_requested()
    assert _progress.run(loop, jnp.zeros(3, jnp.int32)).tolist() == [40, 40, 40]  # usable after


class _Toy(BaseEstimator):
    _parameter_constraints = {"stop": ["boolean"]}

    def __init__(self, stop=False):
        self.stop = stop

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X):
        self.n_features_in_ = X.shape[1]
        self.labels_ = np.zeros(len(X), np.int64)
        if self.stop:
            _sigint()
        return self


def test_interrupted_fit_leaves_the_estimator_unfitted():
    est = _Toy().fit(np.zeros((3, 2)))
    est.stop = True
    with pytest.raises(KeyboardInterrupt):
        est.fit(np.zeros((4, 2)))
    assert not [k for k in vars(est) if k.endswith("_")]  # the earlier fit's attributes too
    est.stop = False
    assert est.fit(np.zeros((5, 2))).labels_.shape == (5,)


def _tiny(name):
    """A small estimator of each driver kind and its fit arguments."""
    import ppclust as pc

    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), 20)
    X = rng.normal(size=(60, 2)) + 5.0 * y[:, None]
    part = np.where(np.arange(60) % 5 == 0, y, -1)
    ml, cl = np.array([[0, 1], [20, 21]]), np.array([[0, 20], [21, 40]])
    if name == "tvclust":
        return pc.TVClust(4, n_warmup=2, n_chains=1, random_state=0, progress_bar=False), X, {"must_link": ml}
    if name == "subcluster":
        est = pc.TVClust(
            4, n_warmup=2, n_chains=1, algorithm="subcluster", random_state=0, progress_bar=False
        )
        return est, X, {"cannot_link": cl}
    if name == "ccib":
        return (
            pc.CCIB(3, n_init=2, max_iter=20, random_state=0, progress_bar=False),
            X,
            {"partial_labels": part},
        )
    if name == "cecib":
        return pc.CECIB(3, n_init=2, random_state=0, progress_bar=False), X, {"partial_labels": part}
    if name == "cecib_batch":
        est = pc.CECIB(3, n_init=2, algorithm="batch", random_state=0, progress_bar=False)
        return est, X, {"partial_labels": part}
    raise ValueError(name)


@pytest.mark.parametrize(
    "name",
    # the sub-cluster sampler's program takes long to compile; its callbacks' stop path is tested above
    ["tvclust", pytest.param("subcluster", marks=pytest.mark.slow), "ccib", "cecib", "cecib_batch"],
)
def test_every_driver_honours_a_stop_request(name, monkeypatch):
    """SIGINT right after a driver dispatches its first compiled program (or before its first compiled
    restart): the fit raises KeyboardInterrupt, nothing fitted, and the same fit then succeeds."""
    real_run, real_check = _progress.run, _progress.check

    def run_then_sigint(fn, *args, **kwargs):
        def dispatch(*a, **k):
            out = fn(*a, **k)
            _sigint()
            return out

        return real_run(dispatch, *args, **kwargs)

    def check_after_sigint():
        _sigint()
        real_check()

    est, X, kw = _tiny(name)
    monkeypatch.setattr(_progress, "run", run_then_sigint)
    monkeypatch.setattr(_progress, "check", check_after_sigint)
    with pytest.raises(KeyboardInterrupt):
        est.fit(X, **kw)
    assert not [k for k in vars(est) if k.endswith("_")]
    monkeypatch.setattr(_progress, "run", real_run)
    monkeypatch.setattr(_progress, "check", real_check)
    assert est.fit(X, **kw).labels_.shape == (60,)


# --- a signal from outside, one child process per estimator (slow) ------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ESTIMATORS)
def test_sigint_stops_a_long_fit_in_a_child_process(name, tmp_path):
    got = interrupt_child(name, tmp_path / "stderr")
    assert got["answer_s"] is not None and got["answer_s"] < ANSWER_S, (
        got,
        (tmp_path / "stderr").read_text(),
    )
    assert got["fitted"] == "fitted []\n" and got["usable"], got


@pytest.mark.slow
def test_jupyter_interrupt_kernel_stops_a_fit():
    jupyter_client = pytest.importorskip("jupyter_client")
    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    try:
        setup = textwrap.dedent(
            """
            import numpy as np, ppclust as pc
            rng = np.random.default_rng(0)
            X = rng.normal(size=(3000, 4)) + 6.0 * rng.integers(0, 4, 3000)[:, None]
            ml = np.array([[0, 1], [2, 3]])
            make = lambda m: pc.TVClust(m, n_warmup=2, n_chains=1, random_state=0, progress_bar=True)
            make(100).fit(X, must_link=ml).labels_.shape
            """
        )
        assert kc.execute_interactive(setup, timeout=900)["content"]["status"] == "ok"
        msg_id = kc.execute("est = make(100_000)\nest.fit(X, must_link=ml)")
        time.sleep(3.0)
        km.interrupt_kernel()
        sent = time.monotonic()
        while True:
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "error":
                assert msg["content"]["ename"] == "KeyboardInterrupt"
                break
        assert time.monotonic() - sent < ANSWER_S + 1.0  # message passing through the kernel's channels
        # the interrupted request's own reply first: a request the kernel receives while it still handles
        # an error is aborted (ipykernel's stop_on_error), as a notebook's queued cells are
        while (reply := kc.get_shell_msg(timeout=60))["parent_header"].get("msg_id") != msg_id:
            pass
        assert reply["content"]["status"] == "error"
        check = "assert not [k for k in vars(est) if k.endswith('_')]\nmake(100).fit(X, must_link=ml)"
        reply = kc.execute_interactive(check, timeout=300)
        assert reply["content"]["status"] == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_ccib_returns_control_within_a_temperature(monkeypatch):
    """CCIB's chunks are inner (P-step, Q-step) alternations, not whole temperatures: with one alternation
    per compiled call there are as many calls as alternations, far more than temperatures (a temperature's
    inner loop can run max_inner alternations, seconds on large data), and the result is unchanged."""
    from ppclust._jax import x64
    from ppclust.inference import ccib as S

    rng = np.random.default_rng(0)
    y = np.r_[rng.normal(0, 1, (12, 1)), rng.normal(4, 1, (12, 1))]
    n = len(y)
    data = S.CCIBData(
        y=jnp.asarray(y),
        z=jnp.zeros(n, jnp.int32),
        design=jnp.ones((n, 1)),
        w_x=jnp.full(n, 1.0 / n),
        w_fit=jnp.ones(n),
        clamp=jnp.zeros(n, bool),
        clamp_q=jnp.zeros((n, 2)),
        cond_mask=jnp.ones(1),
    )
    static = S.Static(n_clusters=2, feature="gaussian", max_iter=30)
    calls = []
    real_run = _progress.run

    def counting_run(fn, *args, **kwargs):
        calls.append(1)
        return real_run(fn, *args, **kwargs)

    with x64():
        keys = jax.random.split(jax.random.key(0), 2)
        ref = S.fit_restarts(keys, data, S.Hyper(), static, chunk=10_000)
        monkeypatch.setattr(_progress, "run", counting_run)
        got = S.fit_restarts(keys, data, S.Hyper(), static, chunk=1)
    steps = int(np.max(ref.n_steps))
    inner = int(np.nansum(np.asarray(ref.trace["n_inner"])[0]))  # restart 0's alternations, recorded steps
    assert inner > 2 * steps  # temperatures take several alternations here
    assert len(calls) >= inner
    for a, b in zip(jax.tree_util.tree_leaves(ref), jax.tree_util.tree_leaves(got), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_gibbs_calls_are_sized_by_work_and_keep_the_draws(monkeypatch):
    """Without a progress bar the sampler still returns control in calls sized by measured work (chunk=None):
    with no work allowed a call (CHUNK_S = 0) every call runs one sweep, warm-up included, so a stop waits
    for one sweep, not the whole run; the draws are those of one call for everything (chunk=1000)."""
    from ppclust.inference import gibbs
    from tests.test_progress import _tiny_problem

    x, fam, links, prior = _tiny_problem()
    kw = dict(n_draws=5, n_warmup=7, n_chains=2, thin=2, k_max=6, pq="collapse", backend="numba")
    calls = []
    real_run = _progress.run

    def counting_run(fn, *args, **kwargs):
        calls.append(1)
        return real_run(fn, *args, **kwargs)

    with jax.enable_x64(True):
        whole = gibbs.sample(jax.random.key(4), x, links, fam, prior, progress_bar=False, chunk=1000, **kw)
        monkeypatch.setattr(_progress, "run", counting_run)
        monkeypatch.setattr(gibbs, "CHUNK_S", 0.0)
        paced = gibbs.sample(jax.random.key(4), x, links, fam, prior, progress_bar=False, **kw)
    assert len(calls) == 7 + 5  # 7 warm-up sweeps, then one draw (2 sweeps, the least a draw takes) a call
    for field in ("labels", "n_clusters", "log_joint", "p", "q", "alpha"):
        np.testing.assert_array_equal(getattr(paced, field), getattr(whole, field), err_msg=field)
