"""The guard that keeps a long process clear of the kernel's limit on memory mappings
(:func:`ppclust._jax.release_compiled_programs`): XLA:CPU holds each compiled program in its own mappings,
and past ``vm.max_map_count`` its loader fails half-way and the process dies of a segmentation fault."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ppclust import DPMeans, _jax
from ppclust.estimators import _base

linux = pytest.mark.skipif(
    _jax.memory_maps() is None or _jax.memory_map_limit() is None,
    reason="needs /proc/self/maps and /proc/sys/vm/max_map_count (Linux)",
)


@linux
def test_memory_maps_counts_the_lines_of_proc_self_maps():
    with open("/proc/self/maps") as f:
        expected = len(f.readlines())
    assert abs(_jax.memory_maps() - expected) <= 8  # (opening the file may map a page or two)
    assert _jax.memory_map_limit() >= 1024


@linux
def test_release_frees_the_mappings_of_compiled_programs_and_only_past_the_threshold():
    @jax.jit
    def f(x):
        return jnp.sin(x) @ x.T + jnp.cos(x).sum()

    before = _jax.memory_maps()
    for n in range(1, 31):  # 30 programs, one per shape
        f(jnp.ones((n, 3))).block_until_ready()
    grown = _jax.memory_maps()
    assert grown - before >= 60  # each compiled program holds mappings of its own
    assert not _jax.release_compiled_programs(fraction=1.0)  # far below the limit: nothing is dropped
    assert _jax.memory_maps() >= grown - 8
    assert not _jax.release_compiled_programs(fraction=0.0)  # nothing compiled since the last look
    assert _jax.release_compiled_programs(fraction=0.0, force=True)
    assert _jax.memory_maps() < grown - 0.8 * (grown - before)  # the programs' mappings are gone
    x = jnp.arange(6.0).reshape(2, 3)  # and jitted functions still compute (compiled again)
    np.testing.assert_allclose(f(x), np.sin(x) @ np.asarray(x).T + np.cos(x).sum(), rtol=1e-6)


def test_every_fit_calls_the_guard_first(monkeypatch):
    calls = []
    monkeypatch.setattr(_base, "release_compiled_programs", lambda: calls.append(1) or False)
    X = np.random.default_rng(0).normal(size=(40, 2))
    DPMeans(lam=4.0, random_state=0).fit(X)
    assert calls == [1]


@linux
def test_a_process_fitting_many_shapes_stays_under_a_mapping_limit():
    """The user's case in a fresh process: one estimator fitted on 10 data sizes (one set of new programs
    each, ~490 mappings). With a limit set 800 mappings above the count after the first fit, the guard
    clears when it is passed: the count never runs far past it, and the labels equal those of a process
    that never clears (a plain run of the same fits, limit off)."""
    script = textwrap.dedent("""
        import json, sys
        import numpy as np
        from ppclust import SemiSupervisedGMM, _jax
        guard = sys.argv[1] == "on"
        rng = np.random.default_rng(0)
        peak, cleared, labels = 0, 0, []
        for i, n in enumerate(range(60, 160, 10)):
            X = np.concatenate([rng.normal(c, 0.5, size=(n // 3 + 1, 2)) for c in (-3, 0, 3)])[:n]
            y = np.full(n, -1)
            y[:6] = [0, 0, 1, 1, 2, 2]
            X[:6] = [[-3, 0], [-3, 0], [0, 0], [0, 0], [3, 0], [3, 0]]
            if i == 1 and guard:
                _jax._MAP_LIMIT[:] = [_jax.memory_maps() + 800]
                _jax.MAP_FRACTION = 1.0
            before = _jax.memory_maps()
            m = SemiSupervisedGMM(3, random_state=0).fit(X, y)
            cleared += _jax.memory_maps() < before
            peak = max(peak, _jax.memory_maps())
            labels.append(m.labels_.tolist())
        print(json.dumps({"peak": peak, "limit": _jax._MAP_LIMIT[0], "cleared": cleared, "labels": labels}))
    """)
    runs = {}
    for mode in ("on", "off"):
        out = subprocess.run(
            [sys.executable, "-c", script, mode], capture_output=True, text=True, timeout=600
        )  # (the user's persistent cache: loaded programs map like compiled)
        assert out.returncode == 0, out.stderr[-2000:]
        runs[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    on, off = runs["on"], runs["off"]
    assert on["cleared"] >= 2  # the guard fired
    assert on["peak"] < on["limit"] + 800  # at most one fit's programs past the limit
    assert off["peak"] > on["limit"] + 2000  # without it the count kept growing
    assert on["labels"] == off["labels"]  # and clearing changed no result


@pytest.mark.parametrize(
    ("value", "expected"), [("", 0.5), ("0.3", 0.3), ("off", None), ("0", None), ("1", 1.0)]
)
def test_map_fraction_from_the_environment(monkeypatch, value, expected):
    monkeypatch.setenv("PPCLUST_MAP_FRACTION", value)
    assert _jax._map_fraction() == expected


@pytest.mark.parametrize("value", ["abc", "1.5", "-0.2"])
def test_a_bad_map_fraction_warns_and_keeps_the_default(monkeypatch, value):
    monkeypatch.setenv("PPCLUST_MAP_FRACTION", value)
    with pytest.warns(RuntimeWarning, match="PPCLUST_MAP_FRACTION"):
        assert _jax._map_fraction() == 0.5


def test_map_fraction_off_never_clears(monkeypatch):
    monkeypatch.setattr(_jax, "MAP_FRACTION", None)
    assert not _jax.release_compiled_programs(force=True)
