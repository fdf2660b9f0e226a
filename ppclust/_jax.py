"""Small JAX helpers shared by every solver: float64 scopes, key handling, dtype policy."""

from __future__ import annotations

import contextlib

import jax
import numpy as np

# Imported before anything is compiled: importing numpyro adds JAX tracing-context values, so a
# later first import would invalidate every jit cache entry made so far (measured: a 3 s recompile
# of an already compiled CEC-IB fit once SemiSupervisedGMM had pulled numpyro in).
import numpyro  # noqa: E402,F401  isort: skip

LABEL_DTYPE = np.int32


def x64():
    """Context manager enabling float64 for a solver call without touching the user's global config.

    Deterministic solvers run inside it (DESIGN "Numerics"); arrays created inside are float64.
    """
    return jax.enable_x64(True)


def as_seed(random_state) -> int:
    """Turn ``None`` / int / numpy Generator or RandomState into a non-negative int seed."""
    if random_state is None:
        return int(np.random.default_rng().integers(0, 2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**31 - 1))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    raise TypeError(f"random_state must be None, an int or a numpy Generator, got {type(random_state)}")


def as_key(random_state):
    """Turn ``None`` / int / numpy Generator / JAX key into a typed JAX PRNG key."""
    if isinstance(random_state, jax.Array):
        if jax.dtypes.issubdtype(random_state.dtype, jax.dtypes.prng_key):
            return random_state
        return jax.random.wrap_key_data(random_state)
    try:
        return jax.random.key(as_seed(random_state))
    except TypeError:
        raise TypeError(f"random_state must be None, an int, a numpy Generator or a JAX key, got "
                        f"{type(random_state)}") from None


@contextlib.contextmanager
def nullcontext():
    yield
