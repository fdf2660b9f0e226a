"""Small JAX helpers shared by every solver: float64 scopes, key handling, dtype policy, and the
persistent compilation cache (:func:`enable_compilation_cache`, run when this module is imported).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import warnings
from pathlib import Path

import jax
import numpy as np

# Imported before anything is compiled: importing numpyro adds JAX tracing-context values, so a
# later first import would invalidate every jit cache entry made so far (an already compiled fit would
# compile again once another estimator pulled numpyro in).
with warnings.catch_warnings():
    # numpyro imports tqdm.auto, which in a Jupyter kernel without ipywidgets warns "IProgress not found"
    # although nothing asked for a widget (ppclust's own bars pick the text bar there, ppclust._progress)
    warnings.filterwarnings("ignore", message="IProgress not found")
    import numpyro  # noqa: E402,F401  isort: skip

__all__ = [
    "LABEL_DTYPE",
    "CACHE_MIN_COMPILE_SECS",
    "cache_dir",
    "enable_compilation_cache",
    "x64",
    "as_seed",
    "as_key",
]

LABEL_DTYPE = np.int32

_OFF = {"0", "off", "false", "no", "none"}
_JAX_DEFAULT_MIN_COMPILE_SECS = 1.0  # JAX's own default of jax_persistent_cache_min_compile_time_secs
#: Programs compiling faster than this are not written to the cache (JAX's default,
#: ``_JAX_DEFAULT_MIN_COMPILE_SECS``, would leave out the many short programs of a first fit: estimators'
#: set-up, point estimates, metrics).
CACHE_MIN_COMPILE_SECS = 0.1


def cache_dir() -> Path | None:
    r"""ppclust's per-user cache folder, or ``None`` when disabled.

    Returns
    -------
    Path or None
        ``PPCLUST_CACHE_DIR`` when set (``off``/``0`` disables the cache: ``None``); otherwise the platform
        convention: ``$XDG_CACHE_HOME/ppclust`` or ``~/.cache/ppclust`` (Linux and other Unix),
        ``~/Library/Caches/ppclust`` (macOS), ``%LOCALAPPDATA%\ppclust`` (Windows).

    Examples
    --------
    >>> import os
    >>> from ppclust._jax import cache_dir
    >>> cache_dir() is None or cache_dir().name == "ppclust" or "PPCLUST_CACHE_DIR" in os.environ
    True
    """
    env = os.environ.get("PPCLUST_CACHE_DIR", "").strip()
    if env.lower() in _OFF:
        return None
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "ppclust"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "ppclust"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ppclust"


def enable_compilation_cache() -> Path | None:
    """Keep compiled programs on disk so that a new process does not compile them again.

    Run when this module is imported; idempotent.

    Returns
    -------
    Path or None
        The JAX cache folder in use, or ``None`` (disabled, or not writable: then a debug message on the
        ``ppclust`` logger and nothing is changed).

    Notes
    -----
    * JAX: ``jax_compilation_cache_dir`` = ``cache_dir()/jax``, keeping programs that compile in at
      least :data:`CACHE_MIN_COMPILE_SECS`, unless the user configured a cache directory
      (``JAX_COMPILATION_CACHE_DIR`` or ``jax.config``): then nothing is changed. Other JAX programs of
      the same process are cached there too (that is how JAX's cache works).
    * numba (the compiled kernels): ``NUMBA_CACHE_DIR`` = ``cache_dir()/numba`` unless set.

    Examples
    --------
    >>> from ppclust._jax import enable_compilation_cache
    >>> folder = enable_compilation_cache()
    >>> folder is None or folder.is_dir()
    True
    """
    root = cache_dir()
    if root is None:
        return None
    log = logging.getLogger("ppclust")
    if not os.environ.get("NUMBA_CACHE_DIR") and _writable(root / "numba"):
        os.environ["NUMBA_CACHE_DIR"] = str(root / "numba")
        numba_config = sys.modules.get("numba.core.config")
        if numba_config is not None:  # numba read its environment at import: tell it too
            numba_config.CACHE_DIR = str(root / "numba")
    configured = jax.config.jax_compilation_cache_dir
    if configured:
        return Path(configured)
    folder = root / "jax"
    if not _writable(folder):
        log.debug(
            "ppclust: cache folder %s is not writable; JAX programs are compiled in every process", folder
        )
        return None
    jax.config.update("jax_compilation_cache_dir", str(folder))
    if jax.config.jax_persistent_cache_min_compile_time_secs == _JAX_DEFAULT_MIN_COMPILE_SECS:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", CACHE_MIN_COMPILE_SECS)
    try:  # JAX decides once per process whether a cache is used; a compile before this import decided no
        from jax._src import compilation_cache as _cc

        if getattr(_cc, "_cache_initialized", False) and getattr(_cc, "_cache", None) is None:
            _cc.reset_cache()
    except Exception:  # noqa: BLE001 - private API; without it the cache applies from the next process
        pass
    log.debug("ppclust: JAX compilation cache in %s", folder)
    return folder


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(folder, os.W_OK)


enable_compilation_cache()


def x64():
    """Context manager enabling float64 for a solver call without touching the user's global configuration.

    Deterministic solvers run inside it; arrays created inside are float64.

    Returns
    -------
    context manager

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust._jax import x64
    >>> with x64():
    ...     print(jnp.zeros(2).dtype)
    float64
    """
    return jax.enable_x64(True)


def as_seed(random_state) -> int:
    """Turn a ``random_state`` into a non-negative int seed.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or numpy.random.RandomState
        ``None`` draws a fresh seed; an int is returned as it is; a generator gives its next integer.

    Returns
    -------
    int

    Examples
    --------
    >>> from ppclust._jax import as_seed
    >>> as_seed(7)
    7
    """
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
    """Turn a ``random_state`` into a typed JAX PRNG key.

    Parameters
    ----------
    random_state : None, int, numpy.random.Generator or jax.Array
        As :func:`as_seed`, or a JAX key (typed keys are returned as they are, raw key data wrapped).

    Returns
    -------
    jax.Array
        A typed key (``jax.random.key``).

    Examples
    --------
    >>> import jax
    >>> from ppclust._jax import as_key
    >>> bool((jax.random.key_data(as_key(0)) == jax.random.key_data(jax.random.key(0))).all())
    True
    """
    if isinstance(random_state, jax.Array):
        if jax.dtypes.issubdtype(random_state.dtype, jax.dtypes.prng_key):
            return random_state
        return jax.random.wrap_key_data(random_state)
    try:
        return jax.random.key(as_seed(random_state))
    except TypeError:
        raise TypeError(
            f"random_state must be None, an int, a numpy Generator or a JAX key, got {type(random_state)}"
        ) from None


@contextlib.contextmanager
def nullcontext():
    yield
