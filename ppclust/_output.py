"""Safe output folders for the command line: ppclust never deletes or overwrites what it did not write.

``OutputDir(path, overwrite=False)`` is used in two steps:

1. ``check()`` (before any work): refuses a path that is an existing file, a broken symbolic link,
   or an existing folder that is not empty unless ``overwrite=True``. A refused run has cost the
   user nothing.
2. ``with out.staging() as tmp:`` the command writes every file into a fresh temporary folder beside
   the destination. On success each written file is moved into the destination with ``os.replace``
   (atomic per file), creating the destination if needed; files already there that ppclust did not
   write this time are left untouched, and the destination folder itself is never removed. On
   failure the temporary folder, which only ppclust wrote to, is removed, and so are the folders
   this run created (the destination and missing parents) if they are still empty; the destination
   is as it was.

``overwrite=True`` therefore means: replace the files of the same name that this run writes
(``labels.csv``, ``summary.json``, figures ...), nothing else.

Interrupted runs leave nothing behind. While a staging folder exists, SIGTERM and SIGHUP (whose default
action ends the process without running any clean-up) raise ``SystemExit(128 + signal)`` instead, so
the clean-up above runs; SIGINT raises ``KeyboardInterrupt``, which does the same. Only SIGKILL (or a
power cut) can leave a staging folder: each holds a marker file, ``.ppclust-staging``, with the
process id that made it, and the next run that stages beside it removes every marked staging folder
made before that run started by a process that has ended. Folders without the marker are never
touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path

from ppclust.errors import OutputExistsError, PPClustError

__all__ = ["OutputDir", "exit_on_signals", "MARKER", "remove_stale_staging", "write_file"]

#: The marker file inside each staging folder: ``{"pid": ..., "created": ...}`` (JSON).
MARKER = ".ppclust-staging"

#: When this process started (as read at import): staging folders made before it are candidates for removal.
_STARTED = time.time()

#: Signals whose default action ends the process without clean-up (only those the platform has).
_FATAL_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def _raise_exit(signum, frame):
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def exit_on_signals():
    """Context manager: SIGTERM and SIGHUP raise ``SystemExit(128 + signal)`` inside it, so ``finally``
    blocks and context managers run (the default action ends the process at once).

    A signal whose handler is not the default one (set by the caller) is left alone; outside the main
    thread (where Python cannot set handlers) nothing changes.

    Examples
    --------
    >>> import os, signal
    >>> from ppclust._output import exit_on_signals
    >>> try:
    ...     with exit_on_signals():
    ...         os.kill(os.getpid(), signal.SIGTERM)
    ... except SystemExit as stop:
    ...     print(stop.code == 128 + signal.SIGTERM)
    True
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for sig in _FATAL_SIGNALS:
        if signal.getsignal(sig) == signal.SIG_DFL:
            previous[sig] = signal.signal(sig, _raise_exit)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def write_file(path, text: str, overwrite: bool, *, suffix: str = "") -> None:
    """Write ``text`` to ``path`` through a temporary file beside it; never replace a file unless asked.

    The text goes to a ``.ppclust-*`` file in the destination's folder and is moved into place only when
    complete (SIGINT/SIGTERM unwind through :func:`exit_on_signals`); without ``overwrite`` the move is a
    hard link, which fails if the file appeared meanwhile, so nothing is ever replaced.

    Parameters
    ----------
    path : str or Path
        The file to write.
    text : str
        Its content.
    overwrite : bool
        Replace an existing file.
    suffix : str, default=""
        The temporary file's suffix.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> p = Path(tempfile.mkdtemp()) / "out.csv"
    >>> write_file(p, "0,1\\n", overwrite=False)
    >>> try:
    ...     write_file(p, "2,3\\n", overwrite=False)
    ... except OutputExistsError as err:
    ...     print("refused")
    refused
    """
    from ppclust._input_files import CLIError

    path = Path(path)
    if path.exists() and (path.is_dir() or not overwrite):
        raise OutputExistsError(
            f"output file {str(path)!r} exists; choose another name or pass --overwrite"
            if not path.is_dir()
            else f"output path {str(path)!r} is a folder; give a file name"
        )
    parent = path.resolve().parent
    if not parent.is_dir():
        raise CLIError(f"folder {str(parent)!r} of the output file does not exist")
    with exit_on_signals():
        fd, tmp = tempfile.mkstemp(prefix=".ppclust-", suffix=suffix, dir=parent)
        try:
            with os.fdopen(fd, "w") as fh:
                fh.write(text)
            if overwrite:
                os.replace(tmp, path)
            else:
                os.link(tmp, path)  # fails if the file appeared meanwhile: nothing is replaced
        except FileExistsError as err:
            raise OutputExistsError(f"output file {str(path)!r} exists; pass --overwrite") from err
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's) or unknown: keep its folder
    return True


def remove_stale_staging(parent) -> list[str]:
    r"""Remove the staging folders in ``parent`` left by ppclust runs that were killed (SIGKILL).

    A folder is removed only when its name starts with ``.ppclust-``, it holds the :data:`MARKER` file
    that ppclust writes into each staging folder, the marker is older than this process and the process
    id it records has ended. Anything else (a folder without the marker, a live run's folder) is
    left alone.

    Parameters
    ----------
    parent : str or os.PathLike
        The folder to clean (the parent of an output folder).

    Returns
    -------
    list of str
        The names of the folders removed.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from ppclust._output import remove_stale_staging
    >>> remove_stale_staging(Path(tempfile.mkdtemp()))
    []
    """
    removed = []
    try:
        entries = list(Path(parent).iterdir())
    except OSError:
        return removed
    for d in entries:
        if not d.name.startswith(".ppclust-") or d.is_symlink() or not d.is_dir():
            continue
        marker = d / MARKER
        try:
            info = json.loads(marker.read_text())
            pid, created = int(info["pid"]), float(info["created"])
            old = marker.stat().st_mtime < _STARTED and created < _STARTED
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not clearly ppclust's: never touched
        if old and pid != os.getpid() and not _alive(pid):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d.name)
    return removed


class OutputDir:
    r"""An output folder that ppclust fills without deleting or overwriting what it did not write.

    Parameters
    ----------
    path : str or os.PathLike
        The destination folder (created when missing).
    overwrite : bool, default False
        Replace the files of the same name that this run writes; nothing else is touched either way.

    Attributes
    ----------
    written : list of str
        The files moved into the destination, relative to it.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from ppclust._output import OutputDir
    >>> out = OutputDir(Path(tempfile.mkdtemp()) / "run")
    >>> out.check()
    >>> with out.staging() as tmp:
    ...     _ = (tmp / "labels.csv").write_text("label\n0\n")
    >>> out.written
    ['labels.csv']
    """

    def __init__(self, path: str | os.PathLike, *, overwrite: bool = False):
        self.path = Path(path)
        self.overwrite = bool(overwrite)
        self.written: list[str] = []

    def check(self) -> None:
        """Refuse (:class:`ppclust.errors.OutputExistsError`) a path that is a file, a broken symbolic link,
        or a folder that is not empty unless ``overwrite``; called before any work, so a refused run costs
        nothing.
        """
        p = self.path
        if p.is_symlink() and not p.exists():
            raise OutputExistsError(
                f"output path {str(p)!r} is a broken symbolic link (to "
                f"{os.readlink(p)!r}); remove it or choose another folder"
            )
        if p.exists() and not p.is_dir():
            raise OutputExistsError(f"output path {str(p)!r} exists and is not a folder")
        if p.is_dir() and any(p.iterdir()) and not self.overwrite:
            raise OutputExistsError(
                f"output folder {str(p)!r} exists and is not empty; choose a new folder or pass "
                "--overwrite (replaces only the files ppclust writes)"
            )
        # the nearest existing ancestor must be a folder we can create the destination in
        anc = p.resolve().parent
        while not anc.exists():
            anc = anc.parent
        if not anc.is_dir():
            raise OutputExistsError(f"cannot create output folder {str(p)!r}: {str(anc)!r} is not a folder")

    @contextlib.contextmanager
    def staging(self):
        """Context manager yielding a fresh temporary folder beside the destination.

        On success each file written into it is moved into the destination (``os.replace``, atomic per file);
        on failure the temporary folder and the folders this run created are removed, and the destination is
        as it was.
        """
        self.check()
        parent = self.path.resolve().parent
        # folders this run makes (the destination and missing ancestors), removed again if it fails
        created = [a for a in (self.path.resolve(), parent, *parent.parents) if not a.exists()]
        ok = False
        with exit_on_signals():
            try:
                parent.mkdir(parents=True, exist_ok=True)
                remove_stale_staging(parent)
                tmp = Path(tempfile.mkdtemp(prefix=".ppclust-", dir=parent))
            except OSError as err:
                _remove_empty(created)
                why = err.strerror or err
                raise PPClustError(f"cannot create output folder {str(self.path)!r}: {why}") from err
            try:
                (tmp / MARKER).write_text(json.dumps({"pid": os.getpid(), "created": time.time()}))
                yield tmp
                self._commit(tmp)
                ok = True
            finally:
                shutil.rmtree(tmp, ignore_errors=True)  # only ever holds what this run wrote
                if not ok:
                    _remove_empty(created)

    def _commit(self, tmp: Path) -> None:
        self.check()  # the destination may have changed while we worked
        dest = self.path
        try:
            dest.mkdir(parents=True, exist_ok=True)
            files = sorted(q for q in tmp.rglob("*") if q.is_file() and q != tmp / MARKER)
            for q in files:
                target = dest / q.relative_to(tmp)
                if target.is_dir():
                    raise OutputExistsError(f"cannot write {str(target)!r}: a folder of that name exists")
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(q, target)
                self.written.append(str(q.relative_to(tmp)))
        except OSError as err:
            raise PPClustError(f"cannot write to output folder {str(dest)!r}: {err.strerror or err}") from err


def _remove_empty(folders) -> None:
    """After a failure, remove the folders this run created (deepest first) if they are still empty."""
    for f in folders:
        with contextlib.suppress(OSError):
            f.rmdir()  # only succeeds on an empty folder; never removes anything else
