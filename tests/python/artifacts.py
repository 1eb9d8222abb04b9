"""Artifacts written by hand for the runtime tests: a graph, a manifest of given patterns
and, optionally, a stand-in kernel library (docs/05-composition.md's layout)."""

from __future__ import annotations

import json
import shutil

from fact.export import write_graph

__all__ = ["write_artifact"]


def write_artifact(tmp_path, graph: dict, patterns: list[dict], lib: str | None = None) -> str:
    """``tmp_path/artifact`` with ``graph``, an fp32 manifest of ``patterns`` and, when given,
    ``lib`` copied as its kernel library; returns its path."""
    art = tmp_path / "artifact"
    art.mkdir()
    write_graph(graph, art / "graph.json")
    manifest = {"format": "fact.manifest", "version": 1, "policy": "fp32",
                "library": "libfact_kernels.so", "graph": "graph.json", "patterns": patterns}
    (art / "manifest.json").write_text(json.dumps(manifest))
    if lib is not None:
        shutil.copy(lib, art / "libfact_kernels.so")
    return str(art)
