"""The Python package's own source files, for tests that read code as text (sizes, names)."""

from __future__ import annotations

import os

__all__ = ["ROOT", "PACKAGE", "package_sources"]

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PACKAGE = os.path.join(ROOT, "python", "fact")


def package_sources() -> list[tuple[str, str]]:
    """``(path relative to the repository root, text)`` of every ``.py`` file under
    python/fact/, in path order."""
    out = []
    for dirpath, _, files in os.walk(PACKAGE):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                with open(path, encoding="utf-8") as fh:
                    out.append((os.path.relpath(path, ROOT).replace(os.sep, "/"), fh.read()))
    return sorted(out)
