"""Dynamic shapes on CPU: export with a symbolic batch (graph version 2), the runtime's
size arguments, and the per-call bucket choice of python/fact/buckets.py with stand-in
kernels built from src/families/gemm/abi.h (docs/05-composition.md, "Buckets")."""

from __future__ import annotations

import ctypes
import logging
import os

import pytest
import torch
import torch.nn as nn

from artifacts import write_artifact
from fact.buckets import select_bucket
from fact.export import ExportError, export
from fact.runtime import load
from fact.symbols import parse_size, size_value, specialize

# Two stand-in kernels over host memory (A row-major, B = W^T column-major, bias along N):
# ka serves the first bucket, kc the last; each records that it ran and the M it got. kc's
# can_implement refuses M > 160, as a kernel whose configuration cannot take a size would.
_KERNELS = r"""
#include "gemm/abi.h"
int last_kernel = 0; long long last_m = 0;
static int run(const FactGemmArgs* p, int which) {
  const float *A = p->a, *B = p->b, *bias = p->bias; float* D = p->d;
  for (long i = 0; i < p->m; ++i)
    for (long j = 0; j < p->n; ++j) {
      double acc = 0;
      for (long k = 0; k < p->k; ++k) acc += (double)A[i * p->lda + k] * B[j * p->ldb + k];
      D[i * p->ldd + j] = (float)acc + (bias ? bias[j] : 0.0f);
    }
  last_kernel = which; last_m = p->m;
  return 0;
}
#define KERNEL(sym, which, max_m)                                                        \
  int sym##_can_implement(const FactGemmArgs* a) { return a->m <= max_m ? 0 : 1; }       \
  size_t sym##_workspace_bytes(const FactGemmArgs* a) { return 0; }                      \
  int sym##_run(const FactGemmArgs* p, void* ws, size_t n, void* s) { return run(p, which); } \
  const char* sym##_name(void) { return #sym; }
KERNEL(ka, 1, 1 << 30)
KERNEL(kc, 3, 160)
"""


class _Flat(nn.Module):
    """x [B, 4, 16] -> linear 16->8 (M = 4*B) -> view [4*B, 8] (a size argument)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = x.shape[0]
        return self.fc(x).view(b * 4, 8)


def _graph(model: nn.Module) -> dict:
    batch = torch.export.Dim("B", min=2, max=64)
    return export(model, [torch.randn(8, 4, 16)], dynamic_shapes=({0: batch},))


def test_select_bucket_is_one_bisect_over_upper_bounds() -> None:
    upper = [8, 16, 32]
    assert [select_bucket(upper, s) for s in (1, 8, 9, 16, 17, 32)] == \
        [(0, False), (0, False), (1, False), (1, False), (2, False), (2, False)]
    assert select_bucket(upper, 33) == (2, True)


def test_size_expressions() -> None:
    assert parse_size("512*B*T") == (512, {"B": 1, "T": 1})
    assert parse_size("float32", {"B"}) is None and parse_size("B+1") is None
    assert size_value("4*B", {"B": 6}) == 24
    assert specialize({"m": "4*B", "dtype_a": "float32", "v": [{"sym": "B"}]}, {"B": 3}) == \
        {"m": 12, "dtype_a": "float32", "v": [3]}


def test_export_keeps_the_batch_symbolic() -> None:
    graph = _graph(_Flat())
    assert graph["version"] == 2
    assert graph["symbols"] == {"B": {"min": 2, "max": 64, "seen": [8], "buckets": None}}
    assert graph["inputs"][0]["type"]["shape"] == ["B", 4, 16]
    view = next(n for n in graph["nodes"] if n["op"] == "aten.view.default")
    assert view["args"][1] == [{"sym": "4*B"}, 8]
    assert view["outputs"][0]["type"] == {"dtype": "float32", "shape": ["4*B", 8],
                                          "strides": [8, 1]}
    with pytest.raises(ExportError, match="no such symbol"):
        export(_Flat(), [torch.randn(8, 4, 16)],
               dynamic_shapes=({0: torch.export.Dim("B", max=64)},), buckets={"T": [8]})


def _bucketed_artifact(tmp_path, build_c_library) -> tuple[str, nn.Module]:
    src = tmp_path / "kernels.c"
    src.write_text(_KERNELS)
    lib = build_c_library("gemm/abi.h", str(src), "libbuckets.so")
    torch.manual_seed(0)
    model = _Flat()
    problem = {"kind": "gemm", "m": "4*B", "n": 8, "k": 16, "l": 1, "layout_a": "row",
               "layout_b": "col", "lda": 16, "ldb": 16, "ldd": 8, "batch_stride_a": 0,
               "batch_stride_b": 0, "batch_stride_d": 0, "bias": "n", "alpha": 1.0, "beta": 1.0}

    def bucket(lo: int, hi: int, impl: str, symbol: str | None) -> dict:
        return {"lo": lo, "hi": hi, "problem": specialize(problem, {"B": hi}), "impl": impl,
                "kernel": symbol or "cublas_fake", "symbol": symbol, "workspace_bytes": 0}

    pattern = {"id": "p0", "rule": "gemm", "abi": "gemm", "nodes": ["linear"],
               "output": "linear", "operands": {"a": "x", "b": "p_fc_weight",
                                                "bias": "p_fc_bias"},
               "problem": problem, "impl": "cutlass", "kernel": None, "symbol": None,
               "size_symbol": "B", "workspace_bytes": 0,
               "buckets": [bucket(2, 8, "cutlass", "ka"), bucket(9, 16, "vendor", None),
                           bucket(17, 32, "cutlass", "kc")]}
    return write_artifact(tmp_path, _graph(model), [pattern], lib), model


def test_each_call_runs_its_buckets_kernel(tmp_path, build_c_library, caplog) -> None:
    art, model = _bucketed_artifact(tmp_path, build_c_library)
    fm = load(art, model)
    binding = fm.bindings["p0"]
    binding.device_type = "cpu"  # host memory is the stand-in kernels' device
    lib = ctypes.CDLL(os.path.join(art, "libfact_kernels.so"))  # the loaded copy
    last_kernel = ctypes.c_int.in_dll(lib, "last_kernel")
    last_m = ctypes.c_longlong.in_dll(lib, "last_m")
    ran = {}
    with caplog.at_level(logging.WARNING, logger="fact"):
        # 3, 8: the first bucket's kernel; 12: the vendor bucket (ATen); 20: the last
        # bucket's kernel; 36, above every bucket: the last bucket's kernel (it accepts
        # M = 144); 48: refused by that kernel (M = 192 > 160), so ATen with the reason.
        for b in (3, 8, 12, 20, 36, 48):
            last_kernel.value, last_m.value = 0, 0
            x = torch.randn(b, 4, 16)
            out = fm(x)
            assert out.shape == (4 * b, 8)
            torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-5)
            ran[b] = (last_kernel.value, last_m.value)
    assert ran == {3: (1, 12), 8: (1, 32), 12: (0, 0), 20: (3, 80), 36: (3, 144), 48: (0, 0)}
    assert binding.calls_per_bucket == [2, 1, 3]
    assert fm.fallback_counts() == {"p0": 1}
    (reason,) = fm.fallback_reasons()["p0"]
    assert "can_implement rejected" in reason
    # Above every bucket: said once, naming the size and the bucket that serves it.
    said = [r.getMessage() for r in caplog.records if "above every tuned bucket" in r.getMessage()]
    assert len(said) == 1 and "B=36" in said[0] and "17..32" in said[0]
    # One binding per size, reused: a second call at 20 makes none.
    before = binding.binding_for(20)
    fm(torch.randn(20, 4, 16))
    assert binding.binding_for(20) is before
