"""SwiGLU in the runtime (python/fact/families/gemm_swiglu.py), on CPU with a host-memory
stand-in of the SwiGLU kernel (the FactGemmArgs ABI, the interleaved weight of
src/families/gemm/swiglu_layout.h): the kernel's arguments, the weight interleaved once at
load, the output against eager, the ATen fallback on a shape mismatch, and weights that do
not fit refused at load."""

from __future__ import annotations

import ctypes
import os

import pytest
import torch
import torch.nn as nn

from artifacts import write_artifact
from fact.export import export
from fact.families.gemm_swiglu import interleave
from fact.runtime import ArtifactError, load

# D[i, j] = silu(g) * u with g = A[i, :] . B[c, :], u = A[i, :] . B[c + 8, :],
# c = 16 (j / 8) + j % 8: B is the interleaved [2H, K] weight (row-major, ldb = K).
_FAKE_SWIGLU = r"""
#include <math.h>
#include <stddef.h>
#include "gemm/abi.h"
long long fs_last_n = -1, fs_last_ldb = -1, fs_last_ldd = -1;
const void* fs_last_b = 0;
int fs_calls = 0;
int fswiglu_can_implement(const FactGemmArgs* p) { return p->n % 16 == 0 && !p->bias ? 0 : FACT_ERR_PROBLEM; }
size_t fswiglu_workspace_bytes(const FactGemmArgs* p) { return 0; }
int fswiglu_run(const FactGemmArgs* p, void* ws, size_t n, void* s) {
  const float *A = p->a, *B = p->b;
  float* D = p->d;
  ++fs_calls;
  fs_last_n = p->n; fs_last_ldb = p->ldb; fs_last_ldd = p->ldd; fs_last_b = p->b;
  for (long i = 0; i < p->m; ++i)
    for (long j = 0; j < p->n / 2; ++j) {
      const long c = j / 8 * 16 + j % 8;
      double g = 0, u = 0;
      for (long k = 0; k < p->k; ++k) {
        g += (double)A[i * p->lda + k] * B[c * p->ldb + k];
        u += (double)A[i * p->lda + k] * B[(c + 8) * p->ldb + k];
      }
      D[i * p->ldd + j] = (float)(g / (1.0 + exp(-g)) * u);
    }
  return 0;
}
const char* fswiglu_name(void) { return "fake_host_swiglu_f32"; }
"""


class _Mlp(nn.Module):
    """Llama's gate and up: silu(w1(x)) * w3(x), H = 24 (three blocks of 8)."""

    def __init__(self) -> None:
        super().__init__()
        self.w1, self.w3 = nn.Linear(16, 24, bias=False), nn.Linear(16, 24, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.silu(self.w1(x)) * self.w3(x)


@pytest.fixture
def swiglu_library(tmp_path, build_c_library) -> str:
    src = tmp_path / "fake_swiglu.c"
    src.write_text(_FAKE_SWIGLU)
    return build_c_library("gemm/abi.h", str(src), "libfake_swiglu.so", ("-lm",))


def _pattern(graph: dict, hidden: int = 24) -> dict:
    """The manifest entry discovery's merge_swiglu writes for _Mlp (x of [2, 5, 16])."""
    names = [n["name"] for n in graph["nodes"]]
    assert names == ["linear", "silu", "linear_1", "mul"], names
    problem = {"kind": "gemm", "m": 10, "n": 2 * hidden, "k": 16, "l": 1, "layout_a": "row",
               "layout_b": "col", "lda": 16, "ldb": 16, "ldd": hidden, "batch_stride_a": 0,
               "batch_stride_b": 0, "batch_stride_d": 0, "bias": None, "alpha": 1.0, "beta": 0.0,
               "swiglu": {"gate": {"output": "linear", "b": "p_w1_weight"},
                          "up": {"output": "linear_1", "b": "p_w3_weight"}, "hidden": hidden,
                          "interleave": 8}}
    return {"id": "p0", "rule": "gemm", "nodes": names, "output": "mul",
            "operands": {"a": "x", "b": "p_w1_weight", "b1": "p_w3_weight"}, "problem": problem,
            "impl": "cutlass", "kernel": "fake_host_swiglu_f32", "symbol": "fswiglu",
            "workspace_bytes": 0, "verified": True}


def _load(tmp_path, lib: str, hidden: int = 24):
    torch.manual_seed(0)
    model = _Mlp()
    graph = export(model, [torch.randn(2, 5, 16)])
    fm = load(write_artifact(tmp_path, graph, [_pattern(graph, hidden)], lib), model)
    fm.bindings["p0"].device_type = "cpu"  # the stand-in kernel runs on host memory
    return fm, model, ctypes.CDLL(os.path.join(tmp_path, "artifact", "libfact_kernels.so"))


def test_one_gemm_over_the_interleaved_weight_writes_silu_g_times_u(tmp_path, swiglu_library) -> None:
    fm, model, lib = _load(tmp_path, swiglu_library)
    x = torch.randn(2, 5, 16)
    out = fm(x)
    assert fm.fallback_counts() == {"p0": 0} and ctypes.c_int.in_dll(lib, "fs_calls").value == 1
    torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-5)
    assert out.shape == (2, 5, 24) and out.is_contiguous()
    # N = 2H over the [2H, K] weight (ldb = K); D holds H per row.
    assert [ctypes.c_longlong.in_dll(lib, f"fs_last_{f}").value for f in ("n", "ldb", "ldd")] == [48, 16, 24]
    assert ctypes.c_void_p.in_dll(lib, "fs_last_b").value == fm.fact_p0_w.data_ptr()
    src = fm.source()
    assert "mul = self.fact_p0(x, fact_p0_w)" in src
    assert "aten.linear" not in src and "aten.silu" not in src and "aten.mul" not in src


def test_the_weight_is_interleaved_once_at_load(tmp_path, swiglu_library) -> None:
    fm, model, lib = _load(tmp_path, swiglu_library)
    w, wg, wu = fm.fact_p0_w, model.w1.weight, model.w3.weight
    assert w.shape == (48, 16) and w.is_contiguous() and not w.requires_grad
    # Rows 16b..16b+7 are the gate's rows 8b..8b+7, rows 16b+8..16b+15 the up's.
    for b in range(3):
        assert torch.equal(w[16 * b:16 * b + 8], wg[8 * b:8 * b + 8])
        assert torch.equal(w[16 * b + 8:16 * b + 16], wu[8 * b:8 * b + 8])
    fm(torch.randn(2, 5, 16))
    fm(torch.randn(2, 5, 16))
    assert fm.fact_p0_w is w and ctypes.c_void_p.in_dll(lib, "fs_last_b").value == w.data_ptr()


def test_a_shape_mismatch_falls_back_to_aten(tmp_path, swiglu_library) -> None:
    fm, model, lib = _load(tmp_path, swiglu_library)
    x = torch.randn(3, 5, 16)  # the plan has 2 x 5 rows
    torch.testing.assert_close(fm(x), model(x), rtol=1e-5, atol=1e-5)
    assert fm.fallback_counts() == {"p0": 1} and ctypes.c_int.in_dll(lib, "fs_calls").value == 0
    assert "x has shape [3, 5, 16], the plan assumed [2, 5, 16]" in fm.bindings["p0"].last_fallback_reason


def test_weights_that_do_not_fit_are_refused_at_load(tmp_path, swiglu_library) -> None:
    with pytest.raises(ArtifactError, match=r"gate weight p_w1_weight has shape \[24, 16\], not \[16, 16\]"):
        _load(tmp_path, swiglu_library, hidden=16)
    with pytest.raises(ValueError, match="H a multiple of 8"):
        interleave(torch.zeros(12, 4), torch.zeros(12, 4))
