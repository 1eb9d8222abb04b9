"""Progress bars for compiling and tuning, drawn from ``factc realize``'s progress lines.

``factc realize`` says on stderr how many kernels it builds (``realize: 12 kernels for 3
patterns, ...``), one line per kernel built (``[4/12] built NAME (41.2 s)``, ``cached`` for a
cache hit) and one per pattern verified and tuned or replayed from the registry
(``realize p0: winner NAME 0.301 ms``, ``realize p0: registry hit, ...``). :class:`Progress`
turns them into two tqdm bars, *compile* (kernels) and *tune* (patterns), shown by default
only when the stream is a terminal (``enabled=None``); ``fact optimize``, :func:`fact.optimize`
and the ``torch.compile`` backend all use it. The bars never change what runs.
"""

from __future__ import annotations

import re
import sys
from typing import Any, TextIO

__all__ = ["Progress", "progress_enabled"]

_PLANNED = re.compile(r"^realize: (\d+) kernels? for (\d+) patterns?")
_BUILT = re.compile(r"^\[(\d+)/(\d+)\] (built|QUARANTINED) (\S+)")
_TUNING = re.compile(r"^realize (\S+): verifying and tuning")
_TUNED = re.compile(r"^realize (\S+): (winner|registry hit|skipped)")


def progress_enabled(enabled: bool | None, stream: TextIO | None = None) -> bool:
    """``enabled`` when given, else whether ``stream`` (default: ``sys.stderr``) is a TTY."""
    if enabled is not None:
        return bool(enabled)
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if callable(isatty) else False
    except (OSError, ValueError):  # a closed stream
        return False


class Progress:
    """The compile and tune bars of one pipeline run (see the module docstring).

    Args:
        enabled: draw the bars; ``None``: only when ``stream`` is a terminal.
        stream: where the bars go (default ``sys.stderr``).
        label: a prefix naming the run (the problem or the backend's subgraph).

    Use :meth:`line` as ``fact.factc.run_factc``'s ``on_line``, and :meth:`close` (or the
    context manager) when the run ends.
    """

    def __init__(self, enabled: bool | None = None, stream: TextIO | None = None,
                 label: str = "") -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = progress_enabled(enabled, self.stream)
        self.label = f"{label}: " if label else ""
        self.patterns = 0
        self._compile: Any = None
        self._tune: Any = None
        self._tuned: set[str] = set()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _bar(self, desc: str, total: int, unit: str) -> Any:
        from tqdm import tqdm  # a dependency (pyproject); imported only when drawing
        return tqdm(total=total, desc=f"{self.label}{desc}", unit=unit, file=self.stream,
                    leave=True, dynamic_ncols=True, mininterval=0.0)

    def line(self, text: str) -> None:
        """Read one progress line of ``factc``; lines of other forms are ignored."""
        if not self.enabled:
            return
        if m := _PLANNED.match(text):
            kernels, self.patterns = int(m.group(1)), int(m.group(2))
            if kernels and self._compile is None:
                self._compile = self._bar("compile", kernels, "kernel")
        elif m := _BUILT.match(text):
            done, total = int(m.group(1)), int(m.group(2))
            if self._compile is None:
                self._compile = self._bar("compile", total, "kernel")
            self._compile.set_postfix_str(m.group(4), refresh=False)
            self._compile.update(done - self._compile.n)
        elif m := _TUNING.match(text):
            self._tune_bar().set_postfix_str(m.group(1))
        elif m := _TUNED.match(text):
            bar = self._tune_bar()
            if m.group(1) not in self._tuned:
                self._tuned.add(m.group(1))
                bar.set_postfix_str(f"{m.group(1)} {m.group(2)}", refresh=False)
                bar.update(1)

    def _tune_bar(self) -> Any:
        if self._tune is None:
            self._tune = self._bar("tune", max(self.patterns, 1), "pattern")
        return self._tune

    def close(self) -> None:
        """Close the bars (they stay on the terminal, at their last count)."""
        for bar in (self._compile, self._tune):
            if bar is not None:
                bar.close()
        self._compile = self._tune = None
