"""GPU-only checks of the Python side (skipped without CUDA): the kernel ABI on device
memory and a real stream, CUDA-event timing, and the pipeline on an example problem."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import torch

from fact.bench import float64_reference, l2_flush_bytes, time_variants
from fact.export import export, write_graph
from fact.runtime import load

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

# A naive CUDA GEMM with the FACT ABI: float32, A row-major, B column-major, bias along N.
_CUDA_KERNEL = r"""
#include "kernel_abi.h"
#include <cuda_runtime.h>
__global__ void gemm(FactGemmArgs p) {
  long j = blockIdx.x * (long)blockDim.x + threadIdx.x, i = blockIdx.y, l = blockIdx.z;
  if (j >= p.n) return;
  const float *A = (const float*)p.a, *B = (const float*)p.b, *bias = (const float*)p.bias;
  float acc = 0.f;
  for (long k = 0; k < p.k; ++k)
    acc += A[l * p.batch_stride_a + i * p.lda + k] * B[l * p.batch_stride_b + j * p.ldb + k];
  ((float*)p.d)[l * p.batch_stride_d + i * p.ldd + j] =
      p.alpha * acc + (bias ? p.beta * bias[j] : 0.f);
}
extern "C" int gk_can_implement(const FactGemmArgs* a) { return 0; }
extern "C" size_t gk_workspace_bytes(const FactGemmArgs* a) { return 256; }
extern "C" int gk_run(const FactGemmArgs* p, void* ws, size_t ws_bytes, void* stream) {
  if (!ws || ws_bytes < 256) return FACT_ERR_WORKSPACE;
  dim3 grid((unsigned)((p->n + 127) / 128), (unsigned)p->m, (unsigned)p->l);
  gemm<<<grid, 128, 0, (cudaStream_t)stream>>>(*p);
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : FACT_ERR_CUDA_BASE + (int)e;
}
extern "C" const char* gk_name(void) { return "naive_cuda_gemm_f32_tn"; }
"""


class _Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(256, 128)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def test_kernel_abi_on_device(tmp_path, repo_root: str) -> None:
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.isfile(nvcc):
        pytest.skip("needs nvcc")
    src = tmp_path / "k.cu"
    src.write_text(_CUDA_KERNEL)
    art = tmp_path / "artifact"
    art.mkdir()
    subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-O2",
                    "-I", os.path.join(repo_root, "src", "realize"), str(src),
                    "-o", str(art / "libfact_kernels.so")], check=True)
    model = _Linear().cuda()
    x = torch.randn(64, 256, device="cuda")
    write_graph(export(model, [x]), art / "graph.json")
    pattern = {"id": "p0", "rule": "gemm", "nodes": ["linear"], "output": "linear",
               "operands": {"a": "x", "b": "p_fc_weight", "bias": "p_fc_bias"},
               "problem": {"kind": "gemm", "m": 64, "n": 128, "k": 256, "l": 1, "lda": 256,
                           "ldb": 256, "ldd": 128, "batch_stride_a": 0, "batch_stride_b": 0,
                           "batch_stride_d": 0, "bias": "n", "alpha": 1.0, "beta": 1.0},
               "impl": "cutlass", "kernel": "naive_cuda_gemm_f32_tn", "symbol": "gk",
               "workspace_bytes": 256, "verified": True}
    (art / "manifest.json").write_text(json.dumps({
        "format": "fact.manifest", "version": 1, "policy": "fp32",
        "library": "libfact_kernels.so", "graph": "graph.json", "patterns": [pattern]}))
    fm = load(art, model)
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        out = fm(x)
    stream.synchronize()
    ref = float64_reference(model, [x])
    assert fm.fallback_counts() == {"p0": 0}
    torch.testing.assert_close(out.double(), ref, rtol=1e-4, atol=1e-4)
    # torch.compile traces through the custom op via its fake implementation.
    compiled = torch.compile(fm, backend="eager", fullgraph=True)
    torch.testing.assert_close(compiled(x), out)


def test_cuda_timing_alternates_and_flushes_l2() -> None:
    assert l2_flush_bytes() >= 2 * 2**20
    a = torch.randn(2048, 2048, device="cuda")
    t = time_variants({"mm": lambda: a @ a, "add": lambda: a + a}, trials=20)
    assert len(t["mm"].trials_ms) == 20 and len(t["add"].trials_ms) == 20
    assert 0 < t["mm"].min_ms <= t["mm"].median_ms <= t["mm"].max_ms
    assert t["add"].median_ms < t["mm"].median_ms * 10
