"""Finding and running the engine, ``factc`` (discover, realize, compose)."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import time
from typing import Callable, Sequence

__all__ = ["FactcError", "find_factc", "run_factc"]

_REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
_log = logging.getLogger("fact.factc")


class FactcError(RuntimeError):
    """``factc`` is missing, or one of its commands failed (message: command and stderr)."""


def find_factc(explicit: str | None = None) -> str:
    """The ``factc`` executable: ``explicit``, else ``$FACT_FACTC``, else
    ``<repo>/build/factc``, else ``factc`` on ``PATH``.

    Raises:
        FactcError: the one named explicitly or by ``FACT_FACTC`` is not an executable, or
            none is found.
    """
    for source, name in (("the factc argument", explicit),
                         ("FACT_FACTC", os.environ.get("FACT_FACTC"))):
        if name:
            found = name if _is_exe(name) else shutil.which(name)
            if not found:
                raise FactcError(f"factc named by {source} ({name}) is not an executable")
            return found
    built = os.path.join(_REPO, "build", "factc")
    if _is_exe(built):
        return built
    found = shutil.which("factc")
    if found:
        return found
    raise FactcError(f"factc not found: set FACT_FACTC, build it into {built} "
                     f"(cmake -B build && cmake --build build), or put it on PATH")


def _is_exe(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def run_factc(factc: str, args: Sequence[str], verbose: bool = False,
              on_line: Callable[[str], None] | None = None) -> float:
    """Run ``factc <args>``; returns the wall time in seconds.

    The engine's progress (its stderr, with its stdout) is read line by line as it comes:
    each line goes to ``on_line`` when given (progress bars, :mod:`fact.progress`) and to
    the ``fact.factc`` logger, at INFO when ``verbose`` and at DEBUG otherwise.

    Raises:
        FactcError: the command cannot start or exits nonzero; the message has the command
            and its stderr.
    """
    cmd = [factc, *args]
    t0 = time.perf_counter()
    level = logging.INFO if verbose else logging.DEBUG
    lines: list[str] = []
    try:
        # stdout joins stderr: one stream read as it comes, so neither pipe can fill up.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, bufsize=1)
    except OSError as exc:
        raise FactcError(f"cannot run {subprocess.list2cmdline(cmd)}: {exc}") from exc
    with proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            _log.log(level, "%s", line)
            if on_line is not None:
                on_line(line)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        stderr = "\n".join(lines).strip() or "(no output)"
        raise FactcError(f"command failed (exit {proc.returncode}): "
                         f"{subprocess.list2cmdline(cmd)}\n{stderr}")
    return wall
