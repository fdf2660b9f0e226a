"""The distribution: ``python -m build`` gives an sdist and a wheel that ``twine check --strict`` accepts,
the wheel installs into a fresh virtual environment and its ``ppclust demo`` runs, and the sdist installs.

Slow (an isolated build fetches setuptools; the demo compiles): ``pytest -m slow tests/test_packaging.py``.
The fresh environment gets ppclust only from the wheel (``--no-deps``, no index); its dependencies (jax,
numpyro, ...) come from the environment running the test through a ``.pth`` line, so the test needs no
network for them, and the import is checked to resolve inside the fresh environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

import ppclust

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def _run(cmd, cwd, env=None, timeout=1200) -> str:
    res = subprocess.run(
        [str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert res.returncode == 0, (
        f"{' '.join(map(str, cmd))} failed:\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    )
    return res.stdout


def _fresh_env(path: Path) -> tuple[Path, dict]:
    """A new virtual environment whose only extra path is this environment's site-packages (the
    dependencies); returns its python and a process environment without PYTHONPATH."""
    venv.create(path, with_pip=True)
    python = path / ("Scripts" if os.name == "nt" else "bin") / "python"
    purelib = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], path).strip()
    Path(purelib, "_ppclust_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return python, env


def test_build_twine_check_install_and_demo(tmp_path):
    pytest.importorskip("build")
    pytest.importorskip("twine")
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "build", "--outdir", dist, ROOT], tmp_path)
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    assert [w.name for w in wheels] == [f"ppclust-{ppclust.__version__}-py3-none-any.whl"]
    assert [s.name for s in sdists] == [f"ppclust-{ppclust.__version__}.tar.gz"]
    _run([sys.executable, "-m", "twine", "check", "--strict", *wheels, *sdists], tmp_path)

    python, env = _fresh_env(tmp_path / "venv-wheel")
    _run([python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheels[0]], tmp_path, env)
    where = _run(
        [python, "-c", "import ppclust; print(ppclust.__file__, ppclust.__version__)"], tmp_path, env
    )
    assert where.split()[0].startswith(str(tmp_path / "venv-wheel")), where
    assert where.split()[1] == ppclust.__version__
    script = python.parent / ("ppclust.exe" if os.name == "nt" else "ppclust")
    _run([script, "demo", "--quick", "--out", tmp_path / "demo"], tmp_path, env)
    assert any((tmp_path / "demo").iterdir())

    python, env = _fresh_env(tmp_path / "venv-sdist")
    _run([python, "-m", "pip", "install", "-q", "--no-deps", sdists[0]], tmp_path, env)
    where = _run([python, "-c", "import ppclust; print(ppclust.__file__)"], tmp_path, env)
    assert where.startswith(str(tmp_path / "venv-sdist")), where
