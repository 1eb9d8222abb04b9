"""The runtime on CPU: vendor artifacts reproduce eager exactly; the kernel ABI path works
against a host-memory stand-in library built from src/realize/kernel_abi.h."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess

import pytest
import torch
import torch.nn as nn

from fact.export import export, export_program, write_graph
from fact.runtime import ArtifactError, load, resolve_op, save_params


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 32)
        self.register_buffer("shift", torch.randn(16))

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.nn.functional.gelu(self.fc(x), approximate="tanh")
        p, q = torch.split(h, 16, -1)
        z = torch.mm(p + self.shift, y.t())
        return z, torch.softmax(q * 0.5, dim=-1)


def _artifact(tmp_path, graph: dict, patterns: list[dict]) -> str:
    art = tmp_path / "artifact"
    art.mkdir()
    write_graph(graph, art / "graph.json")
    manifest = {"format": "fact.manifest", "version": 1, "policy": "fp32",
                "library": "libfact_kernels.so", "graph": "graph.json", "patterns": patterns}
    (art / "manifest.json").write_text(json.dumps(manifest))
    return str(art)


def _vendor(pid: str, node: str, operands: dict) -> dict:
    return {"id": pid, "rule": "gemm", "nodes": [node], "output": node, "operands": operands,
            "problem": {}, "impl": "vendor", "kernel": "cublas_fp32", "symbol": None,
            "workspace_bytes": 0, "verified": True}


def test_vendor_artifact_reproduces_eager_exactly(tmp_path) -> None:
    torch.manual_seed(0)
    model = _Block()
    x, y = torch.randn(8, 16), torch.randn(12, 16)
    graph = export(model, [x, y])
    mm = next(n for n in graph["nodes"] if n["op"] == "aten.mm.default")
    art = _artifact(tmp_path, graph, [
        _vendor("p0", "linear", {"a": "x", "b": "p_fc_weight", "bias": "p_fc_bias"}),
        _vendor("p1", mm["name"], {"a": mm["args"][0]["ref"], "b": mm["args"][1]["ref"]}),
    ])
    fm = load(art, model)
    z, s = fm(x, y)
    ez, es = model(x, y)
    assert torch.equal(z, ez) and torch.equal(s, es)
    assert fm.fallback_counts() == {}
    # The module shares the model's parameters and reads them by state-dict target.
    assert fm.p_fc_weight is model.fc.weight
    assert torch.equal(fm.b_shift, model.shift)


def test_load_without_model_uses_params_file(tmp_path) -> None:
    model = _Block()
    x, y = torch.randn(4, 16), torch.randn(3, 16)
    ep = export_program(model, [x, y])
    from fact.export import graph_from_program
    art = _artifact(tmp_path, graph_from_program(ep), [])
    with pytest.raises(ArtifactError, match="target 'fc.weight'"):
        load(art)
    save_params({**ep.state_dict, **ep.constants}, art)
    fm = load(art)
    z, s = fm(x, y)
    ez, es = model(x, y)
    assert torch.equal(z, ez) and torch.equal(s, es)


def test_resolve_op() -> None:
    assert resolve_op("aten.linear.default") is torch.ops.aten.linear.default
    assert resolve_op("aten.split.Tensor") is torch.ops.aten.split.Tensor
    with pytest.raises(ArtifactError, match="unknown operator"):
        resolve_op("aten.no_such_op.default")


def test_missing_manifest_is_named(tmp_path) -> None:
    with pytest.raises(ArtifactError, match="manifest.json: missing"):
        load(tmp_path)


# A host-memory stand-in for a generated kernel: same ABI, naive loops, float32 row-major A,
# column-major B (B = W^T of a linear), bias along N. Returns 7 when beta != 1 with a bias.
_FAKE_KERNEL = r"""
#include "kernel_abi.h"
int fk_can_implement_calls = 0;
int fk_last_splits = -1, fk_last_raster = -1, fk_last_swizzle = -1;
int fk_can_implement(const FactGemmArgs* a) { ++fk_can_implement_calls; return a->k > 0 ? 0 : 1; }
size_t fk_workspace_bytes(const FactGemmArgs* a) { return 64; }
int fk_run(const FactGemmArgs* p, void* ws, size_t ws_bytes, void* stream) {
  if (ws == 0 || ws_bytes < 64) return FACT_ERR_WORKSPACE;
  fk_last_splits = p->splits; fk_last_raster = p->raster; fk_last_swizzle = p->swizzle;
  if (p->bias && p->beta != 1.0f) return 7;
  const float *A = p->a, *B = p->b, *bias = p->bias; float* D = p->d;
  for (long l = 0; l < p->l; ++l)
    for (long i = 0; i < p->m; ++i)
      for (long j = 0; j < p->n; ++j) {
        double acc = 0;
        for (long kk = 0; kk < p->k; ++kk)
          acc += (double)A[l * p->batch_stride_a + i * p->lda + kk] *
                 (double)B[l * p->batch_stride_b + j * p->ldb + kk];
        D[l * p->batch_stride_d + i * p->ldd + j] =
            p->alpha * (float)acc + (bias ? p->beta * bias[j] : 0.0f);
      }
  return 0;
}
const char* fk_name(void) { return "fake_host_gemm_f32_tn"; }
"""


class _Linear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


@pytest.fixture
def fake_library(tmp_path, repo_root: str) -> str:
    header = os.path.join(repo_root, "src", "realize", "kernel_abi.h")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None or not os.path.isfile(header):
        pytest.skip("needs a C compiler and src/realize/kernel_abi.h")
    src = tmp_path / "fake.c"
    src.write_text(_FAKE_KERNEL)
    lib = tmp_path / "libfake.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-I", os.path.dirname(header),
                    str(src), "-o", str(lib)], check=True)
    return str(lib)


def _cutlass_artifact(tmp_path, lib: str, beta: float = 1.0,
                      runtime: dict | None = None) -> tuple[str, nn.Module]:
    model = _Linear()
    graph = export(model, [torch.randn(4, 16)])
    pattern = {"id": "p0", "rule": "gemm", "nodes": ["linear"], "output": "linear",
               "operands": {"a": "x", "b": "p_fc_weight", "bias": "p_fc_bias"},
               "problem": {"kind": "gemm", "m": 4, "n": 8, "k": 16, "l": 1,
                           "layout_a": "row", "layout_b": "col", "lda": 16, "ldb": 16,
                           "ldd": 8, "batch_stride_a": 0, "batch_stride_b": 0,
                           "batch_stride_d": 0, "bias": "n", "alpha": 1.0, "beta": beta},
               "impl": "cutlass", "kernel": "fake_host_gemm_f32_tn", "symbol": "fk",
               "workspace_bytes": 0, "verified": True}
    if runtime is not None:
        pattern["runtime"] = runtime
    art = _artifact(tmp_path, graph, [pattern])
    shutil.copy(lib, os.path.join(art, "libfact_kernels.so"))
    return art, model


def test_cutlass_pattern_calls_kernel_through_custom_op(tmp_path, fake_library: str) -> None:
    art, model = _cutlass_artifact(tmp_path, fake_library)
    fm = load(art, model)
    binding = fm.bindings["p0"]
    assert binding.functions is not None and binding.functions.name() == "fake_host_gemm_f32_tn"
    x = torch.randn(4, 16)
    # On CPU tensors the kernel (built for CUDA operands) is refused: ATen fallback, counted.
    out = fm(x)
    assert torch.equal(out, model(x))
    assert fm.fallback_counts() == {"p0": 1}
    assert "cpu" in binding.last_fallback_reason
    # Pretend host memory is the kernel's device: the ctypes struct reaches the C code.
    binding.device_type = "cpu"
    out = fm(x)
    torch.testing.assert_close(out, model(x), rtol=1e-5, atol=1e-5)
    assert fm.fallback_counts() == {"p0": 1}
    # Operands that no longer match the plan fall back to ATen and stay correct.
    x5 = torch.randn(5, 16)
    assert torch.equal(fm(x5), model(x5))
    assert fm.fallback_counts() == {"p0": 2}
    assert "shape [5, 16]" in binding.last_fallback_reason
    xt = torch.randn(16, 4).t()
    assert torch.equal(fm(xt), model(xt))
    assert fm.fallback_counts() == {"p0": 3}
    assert "strides [1, 4]" in binding.last_fallback_reason


def test_tuned_scheduler_options_reach_the_kernel(tmp_path, fake_library: str) -> None:
    # The winner's run-time options (manifest "runtime") travel in every call's arguments.
    for runtime, expected in ((None, (0, 0, 0)),
                              ({"splits": 16, "raster": 2, "swizzle": 4}, (16, 2, 4))):
        sub = tmp_path / f"splits{expected[0]}"
        sub.mkdir()
        art, model = _cutlass_artifact(sub, fake_library, runtime=runtime)
        fm = load(art, model)
        fm.bindings["p0"].device_type = "cpu"
        x = torch.randn(4, 16)
        torch.testing.assert_close(fm(x), model(x), rtol=1e-5, atol=1e-5)
        lib = ctypes.CDLL(os.path.join(art, "libfact_kernels.so"))  # the loaded copy
        got = tuple(ctypes.c_int.in_dll(lib, f"fk_last_{f}").value
                    for f in ("splits", "raster", "swizzle"))
        assert got == expected


def test_kernel_error_code_is_raised_with_kernel_name(tmp_path, fake_library: str) -> None:
    art, model = _cutlass_artifact(tmp_path, fake_library, beta=0.5)
    fm = load(art, model)
    fm.bindings["p0"].device_type = "cpu"
    with pytest.raises(RuntimeError, match="fake_host_gemm_f32_tn.*code 7"):
        fm(torch.randn(4, 16))


def test_repeated_arguments_skip_can_implement(tmp_path, fake_library: str) -> None:
    art, model = _cutlass_artifact(tmp_path, fake_library)
    fm = load(art, model)
    binding = fm.bindings["p0"]
    binding.device_type = "cpu"
    calls = ctypes.c_int.in_dll(ctypes.CDLL(os.path.join(art, "libfact_kernels.so")),
                                "fk_can_implement_calls")
    x = torch.randn(4, 16)
    first = fm(x)
    first_ptr = first.data_ptr()
    torch.testing.assert_close(first, model(x), rtol=1e-5, atol=1e-5)
    assert calls.value == 1
    del first
    second = fm(x)
    torch.testing.assert_close(second, model(x), rtol=1e-5, atol=1e-5)
    # The arguments hold D's pointer: only an identical call (same D) skips the check.
    assert calls.value == (1 if second.data_ptr() == first_ptr else 2)
    assert fm.fallback_counts() == {"p0": 0}
