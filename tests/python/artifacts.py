"""Artifacts written by hand for the runtime tests: a graph, a manifest of given patterns
and, optionally, a stand-in kernel library (docs/05-composition.md's layout)."""

from __future__ import annotations

import json
import shutil

import torch
import torch.nn as nn

from fact.export import export_program, graph_from_program, write_graph
from fact.runtime import save_params

__all__ = ["write_artifact", "GEMM_STUB_SOURCE", "gemm_stub_pattern", "linear_stub_artifact"]

# A kernel library of the GEMM ABI that accepts nothing (the runtime falls back to ATen on
# CPU tensors before calling it): enough to see whether the library was opened and bound.
GEMM_STUB_SOURCE = r"""
#include <stddef.h>
#include "gemm/abi.h"
int stub_can_implement(const FactGemmArgs* a) { return 1; }
size_t stub_workspace_bytes(const FactGemmArgs* a) { return 0; }
int stub_run(const FactGemmArgs* a, void* w, size_t n, void* s) { return 1; }
const char* stub_name(void) { return "stub_gemm_sm90a"; }
"""


def gemm_stub_pattern() -> dict:
    """The manifest entry of one fp32 linear (M 4, N 8, K 16, bias) run by the stand-in
    library of :data:`GEMM_STUB_SOURCE` (symbol ``stub``)."""
    return {"id": "p0", "rule": "gemm", "abi": "gemm", "nodes": ["linear"], "output": "linear",
            "operands": {"a": "input", "b": "p_0_weight", "bias": "p_0_bias"},
            "problem": {"kind": "gemm", "m": 4, "n": 8, "k": 16, "l": 1, "layout_a": "row",
                        "layout_b": "col", "lda": 16, "ldb": 16, "ldd": 8,
                        "batch_stride_a": 0, "batch_stride_b": 0, "batch_stride_d": 0,
                        "bias": "n", "alpha": 1.0, "beta": 1.0},
            "impl": "cutlass", "kernel": "stub_gemm_sm90a", "symbol": "stub",
            "workspace_bytes": 0, "verified": True}


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


def linear_stub_artifact(tmp_path, build_c_library) -> tuple[str, nn.Module, torch.Tensor]:
    """An artifact of ``Linear(16, 8)`` then ReLU whose linear is one CUTLASS pattern run by
    the stand-in library (:data:`GEMM_STUB_SOURCE`), with params.pt; ``build_c_library`` is
    conftest's fixture. Returns (path, model, an input [4, 16] fp32)."""
    torch.manual_seed(0)
    model, x = nn.Sequential(nn.Linear(16, 8), nn.ReLU()).eval(), torch.randn(4, 16)
    ep = export_program(model, [x])
    src = tmp_path / "stub.c"
    src.write_text(GEMM_STUB_SOURCE)
    lib = build_c_library("gemm/abi.h", str(src), "libstub.so")
    art = write_artifact(tmp_path, graph_from_program(ep), [gemm_stub_pattern()], lib)
    save_params({**ep.state_dict, **ep.constants}, art)
    return art, model, x
