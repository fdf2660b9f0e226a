"""Run the Python examples of the user guide, page by page (``python docs/_snippets.py [page ...]``).

Every fenced ``python`` block of a page runs in one namespace, in order (a page is one session); the
value of a block's last expression is printed. Exit code 1 when a block raises. Pages are the
Markdown files of ``docs/guide/`` and ``docs/index.md`` (default: all of them).
"""

from __future__ import annotations

import ast
import os
import re
import sys
import time
import traceback
from pathlib import Path

GUIDE = Path(__file__).resolve().parent / "guide"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def run_page(path: Path) -> bool:
    ns: dict = {"__name__": "__main__"}
    ok = True
    for i, code in enumerate(BLOCK.findall(path.read_text(encoding="utf-8"))):
        tree = ast.parse(code)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        t = time.perf_counter()
        try:
            exec(compile(tree, f"{path.name}[{i}]", "exec"), ns)
            value = (
                eval(compile(ast.Expression(last.value), f"{path.name}[{i}]", "eval"), ns) if last else None
            )
            print(f"  [{i}] ok {time.perf_counter() - t:5.1f} s  {value!r}"[:300])
        except Exception:  # noqa: BLE001 - report every failing block
            ok = False
            print(f"  [{i}] FAILED")
            traceback.print_exc()
    return ok


def main(argv: list[str]) -> int:
    os.environ.setdefault("PPCLUST_PROGRESS", "0")
    os.environ.setdefault("MPLBACKEND", "Agg")
    pages = [GUIDE / f"{a}.md" for a in argv] or [GUIDE.parent / "index.md", *sorted(GUIDE.glob("*.md"))]
    failed = []
    for page in pages:
        page = page if page.exists() else GUIDE.parent / page.name  # "index" is docs/index.md
        print(f"== {page.name}")
        if not run_page(page):
            failed.append(page.name)
    print("failed:", failed or "none")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
