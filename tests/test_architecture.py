"""Imports flow one way (ARCHITECTURE.md): arrays -> SideInfo / family -> solver -> result -> shell.

Every import statement is read from the source (module level and inside functions alike), so a lazy
import against the flow fails here too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "ppclust"
SHELL = ("ppclust.estimators", "ppclust.cli", "ppclust.plot", "ppclust.demo")


def _imports(path: Path, package: list[str] | None = None) -> set[str]:
    """Absolute module names imported by a file (``from a import b`` gives ``a`` and ``a.b``)."""
    if package is None:
        package = list(path.relative_to(PKG.parent).with_suffix("").parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def _files(sub: str):
    return sorted((PKG / sub).rglob("*.py"))


def _hits(files, forbidden):
    return {str(f.relative_to(PKG)): sorted(m for m in _imports(f) if m.startswith(forbidden))
            for f in files if any(m.startswith(forbidden) for m in _imports(f))}


def test_the_reader_sees_every_import(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("import a.b\nfrom c import d\n"
                     "def f():\n    from ppclust import plot\n    from ..cli import main\n")
    got = _imports(probe, ["ppclust", "inference"])
    assert {"a.b", "c.d", "ppclust.plot", "ppclust.cli.main"} <= got


@pytest.mark.parametrize("sub", ["inference", "models"])
def test_core_never_imports_the_shell(sub):
    assert _hits(_files(sub), SHELL) == {}


def test_models_do_not_import_inference():
    assert _hits(_files("models"), ("ppclust.inference",)) == {}


def test_families_and_sideinfo_import_no_solver():
    files = [*_files("families"), PKG / "sideinfo.py"]
    assert _hits(files, ("ppclust.inference", "ppclust.models") + SHELL) == {}


def test_demo_does_not_import_cli():
    assert _hits([PKG / "demo.py"], ("ppclust.cli",)) == {}


def test_estimators_use_no_private_inference_names():
    """No ``from ppclust.inference.x import _y``, no private module, no ``alias._y`` on an inference
    module."""
    bad = {}
    for f in _files("estimators"):
        tree = ast.parse(f.read_text())
        aliases = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ppclust.inference"):
                for a in node.names:
                    private = a.name.startswith("_") or (node.module or "").split(".")[-1].startswith("_")
                    if private:
                        bad.setdefault(f.name, []).append(f"{node.module}.{a.name}")
                    aliases.add(a.asname or a.name)
            elif isinstance(node, ast.Import):
                aliases.update(a.asname for a in node.names
                               if a.name.startswith("ppclust.inference") and a.asname)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                bad.setdefault(f.name, []).append(f"{node.value.id}.{node.attr}")
    assert bad == {}
