"""GPU-only checks of the Python side (skipped without CUDA): the GEMM and attention kernel
ABIs on device memory and a real stream, CUDA-event timing, and the pipeline on an example
problem."""

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
#include "gemm/abi.h"
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


def _nvcc_library(tmp_path, repo_root: str, source: str, name: str, lib) -> None:
    """Writes CUDA `source` to tmp_path/name and compiles it against the families' ABI
    headers (src/families/<name>/abi.h) into the shared library `lib`; skips the test without nvcc."""
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if not os.path.isfile(nvcc):
        pytest.skip("needs nvcc")
    src = tmp_path / name
    src.write_text(source)
    subprocess.run([nvcc, "-shared", "-Xcompiler", "-fPIC", "-O2",
                    "-I", os.path.join(repo_root, "src", "families"), str(src),
                    "-o", str(lib)], check=True)


class _Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(256, 128)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def _linear_artifact(tmp_path, repo_root: str) -> tuple:
    """An artifact of :class:`_Linear` on CUDA whose linear is the naive CUDA kernel above;
    returns (artifact path, model, an input [64, 256])."""
    art = tmp_path / "artifact"
    art.mkdir()
    _nvcc_library(tmp_path, repo_root, _CUDA_KERNEL, "k.cu", art / "libfact_kernels.so")
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
    return art, model, x


def test_kernel_abi_on_device(tmp_path, repo_root: str) -> None:
    art, model, x = _linear_artifact(tmp_path, repo_root)
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
    # CUDA-graph replay: a warm-up call, then a capture, then replays of the same kernel.
    with torch.no_grad():
        outs = [fm(torch.randn_like(x)) for _ in range(2)]
        x2 = torch.randn_like(x)
        replayed = fm(x2)
    assert fm.replay.replays == 2 and not fm.replay.failed, fm.replay.failed
    torch.testing.assert_close(replayed.double(), float64_reference(model, [x2]), rtol=1e-4, atol=1e-4)
    assert outs[1].data_ptr() != replayed.data_ptr() and fm.fallback_counts() == {"p0": 0}
    fm.replay.mode = False
    with torch.no_grad():
        torch.testing.assert_close(fm(x2), replayed)
    assert fm.replay.replays == 2


# A naive CUDA attention kernel with the FACT attention ABI: float32, head_dim <= 128, causal
# (symbols fa_causal_*, as tests/python/attention_cases.py names them).
_CUDA_ATTENTION = r"""
#include "attention/abi.h"
#include <cuda_runtime.h>
#include <math.h>
__global__ void attn(FactAttentionArgs a) {
  long row = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (row >= a.batch * a.heads * a.seq_q) return;
  long i = row % a.seq_q, h = (row / a.seq_q) % a.heads, b = row / (a.seq_q * a.heads);
  long g = h / (a.heads / a.kv_heads);
  const float* q = (const float*)a.q + b * a.q_batch_stride + h * a.q_head_stride + i * a.q_row_stride;
  const float* K = (const float*)a.k + b * a.k_batch_stride + g * a.k_head_stride;
  const float* V = (const float*)a.v + b * a.v_batch_stride + g * a.v_head_stride;
  float mx = -INFINITY, sum = 0.f, acc[128];
  for (long d = 0; d < a.head_dim; ++d) acc[d] = 0.f;
  for (long j = 0; j <= i && j < a.seq_k; ++j) {
    float s = 0.f;
    for (long d = 0; d < a.head_dim; ++d) s += q[d] * K[j * a.k_row_stride + d];
    mx = fmaxf(mx, s * a.scale);
  }
  for (long j = 0; j <= i && j < a.seq_k; ++j) {
    float s = 0.f;
    for (long d = 0; d < a.head_dim; ++d) s += q[d] * K[j * a.k_row_stride + d];
    float p = expf(s * a.scale - mx);
    sum += p;
    for (long d = 0; d < a.head_dim; ++d) acc[d] += p * V[j * a.v_row_stride + d];
  }
  float* o = (float*)a.o + b * a.o_batch_stride + h * a.o_head_stride + i * a.o_row_stride;
  for (long d = 0; d < a.head_dim; ++d) o[d] = acc[d] / sum;
}
extern "C" int fa_causal_can_implement(const FactAttentionArgs* a) {
  if (a->head_dim > 128 || a->heads % a->kv_heads) return FACT_ATTN_ERR_SHAPE;
  return a->mask ? FACT_ATTN_ERR_MASK : 0;
}
extern "C" size_t fa_causal_workspace_bytes(const FactAttentionArgs* a) { return 0; }
extern "C" int fa_causal_run(const FactAttentionArgs* a, void* ws, size_t n, void* stream) {
  long rows = a->batch * a->heads * a->seq_q;
  attn<<<(unsigned)((rows + 127) / 128), 128, 0, (cudaStream_t)stream>>>(*a);
  cudaError_t e = cudaGetLastError();
  return e == cudaSuccess ? 0 : FACT_ATTN_ERR_CUDA_BASE + (int)e;
}
extern "C" const char* fa_causal_name(void) { return "naive_cuda_attn_f32_causal"; }
"""


def test_the_kernel_runs_inside_inductors_code_and_replays(tmp_path, repo_root: str) -> None:
    """remainder="inductor" on the GPU: the kernel is one opaque call in Inductor's code, the
    ReLU after it Inductor's, the kernel runs (no fallback), and FACT's CUDA-graph replay
    captures the Inductor-compiled call."""
    from torch._inductor.utils import run_and_get_code
    art, model, x = _linear_artifact(tmp_path, repo_root)
    fm = load(art, model, remainder="inductor")
    with torch.no_grad():
        out, codes = run_and_get_code(fm, x)
        xs = [torch.randn_like(x) for _ in range(3)]
        outs = [fm(t) for t in xs]  # a warm-up of the kind, a capture, a replay
    code = "\n".join(codes)
    assert "torch.ops.fact.p0" in code and "aten.relu.default(" not in code
    assert fm.remainder.inductor and fm.fallback_counts() == {"p0": 0}
    assert fm.replay.replays >= 1 and not fm.replay.failed, fm.replay.failed
    torch.testing.assert_close(out.double(), float64_reference(model, [x]), rtol=1e-4, atol=1e-4)
    for t, o in zip(xs, outs):
        torch.testing.assert_close(o.double(), float64_reference(model, [t]), rtol=1e-4, atol=1e-4)


def test_attention_abi_on_device(tmp_path, repo_root: str) -> None:
    # minGPT's block: q/k/v views of the projection read in place, O written at strides.o
    # into the [B, T, C] output, on a side stream; then traced by torch.compile.
    from attention_cases import MinGptAttention, mingpt_artifact
    lib = tmp_path / "libattn.so"
    _nvcc_library(tmp_path, repo_root, _CUDA_ATTENTION, "attn.cu", lib)
    model = MinGptAttention().cuda()
    art, model = mingpt_artifact(tmp_path, str(lib), model=model)
    fm = load(art, model)
    x = torch.randn(2, 8, 32, device="cuda")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream), torch.no_grad():
        out = fm(x)
    stream.synchronize()
    assert fm.fallback_counts() == {"p0": 0}
    torch.testing.assert_close(out.double(), float64_reference(model, [x]), rtol=1e-4,
                               atol=1e-4)
    compiled = torch.compile(fm, backend="eager", fullgraph=True)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), out)


def test_cuda_timing_alternates_and_flushes_l2() -> None:
    assert l2_flush_bytes() >= 2 * 2**20
    a = torch.randn(2048, 2048, device="cuda")
    t = time_variants({"mm": lambda: a @ a, "add": lambda: a + a}, trials=20)
    assert len(t["mm"].trials_ms) == 20 and len(t["add"].trials_ms) == 20
    assert 0 < t["mm"].min_ms <= t["mm"].median_ms <= t["mm"].max_ms
    assert t["add"].median_ms < t["mm"].median_ms * 10
