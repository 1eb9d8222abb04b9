"""The GEMM family (python/fact/families/gemm.py) in the runtime, on CPU: the kernel path
works against a host-memory stand-in library built from src/families/gemm/abi.h, with and
without a fused elementwise tail."""

from __future__ import annotations

import ctypes
import os

import pytest
import torch
import torch.nn as nn

from artifacts import write_artifact
from fact.export import export
from fact.families.gemm import FactGemmArgs
from fact.runtime import ArtifactError, load


# A host-memory stand-in for a generated kernel: same ABI, naive loops, float32 row-major A,
# column-major B (B = W^T of a linear), bias along N. Returns 7 when beta != 1 with a bias.
# fen / femn stand in for fused kernels computing relu(acc + c0): fen with B column-major
# and c0 a vector along N, femn with B row-major and c0 of D's shape (rows epi_ld[0] apart,
# batches epi_batch_stride[0] apart).
_FAKE_KERNEL = r"""
#include <stddef.h>
#include "gemm/abi.h"
size_t fk_sizeof_args(void) { return sizeof(FactGemmArgs); }
size_t fk_offsetof_epi(void) { return offsetof(FactGemmArgs, epi); }
size_t fk_offsetof_epi_batch_stride(void) { return offsetof(FactGemmArgs, epi_batch_stride); }
int fk_can_implement_calls = 0;
int fk_last_splits = -1, fk_last_raster = -1, fk_last_swizzle = -1;
int fk_last_epi_null = -1;
long long fk_last_n = -1, fk_last_ldb = -1, fk_last_ldd = -1;
const void *fk_last_b = 0, *fk_last_bias = 0;
int fk_can_implement(const FactGemmArgs* a) { ++fk_can_implement_calls; return a->k > 0 ? 0 : 1; }
size_t fk_workspace_bytes(const FactGemmArgs* a) { return 64; }
/* alpha * (A B)[l, i, j] + beta * bias[j], A row-major, B row-major (b_row) or column-major. */
static float gemm_at(const FactGemmArgs* p, long l, long i, long j, int b_row) {
  const float *A = p->a, *B = p->b, *bias = p->bias;
  double acc = 0;
  for (long kk = 0; kk < p->k; ++kk)
    acc += (double)A[l * p->batch_stride_a + i * p->lda + kk] *
           (double)B[l * p->batch_stride_b + (b_row ? kk * p->ldb + j : j * p->ldb + kk)];
  return p->alpha * (float)acc + (bias ? p->beta * bias[j] : 0.0f);
}
int fk_run(const FactGemmArgs* p, void* ws, size_t ws_bytes, void* stream) {
  if (ws == 0 || ws_bytes < 64) return FACT_ERR_WORKSPACE;
  fk_last_splits = p->splits; fk_last_raster = p->raster; fk_last_swizzle = p->swizzle;
  fk_last_epi_null = !p->epi[0] && !p->epi[1] && !p->epi[2] && !p->epi[3];
  fk_last_n = p->n; fk_last_ldb = p->ldb; fk_last_ldd = p->ldd;
  fk_last_b = p->b; fk_last_bias = p->bias;
  if (p->bias && p->beta != 1.0f) return 7;
  float* D = p->d;
  for (long l = 0; l < p->l; ++l)
    for (long i = 0; i < p->m; ++i)
      for (long j = 0; j < p->n; ++j) D[l * p->batch_stride_d + i * p->ldd + j] = gemm_at(p, l, i, j, 0);
  return 0;
}
const char* fk_name(void) { return "fake_host_gemm_f32_tn"; }

long long fe_last_epi_ld = -1, fe_last_epi_batch_stride = -1;
static int fused_run(const FactGemmArgs* p, void* ws, size_t ws_bytes, int b_row, int mn) {
  if (ws == 0 || ws_bytes < 64) return FACT_ERR_WORKSPACE;
  if (p->epi[0] == 0) return FACT_ERR_EPILOGUE_INPUT;
  fe_last_epi_ld = p->epi_ld[0]; fe_last_epi_batch_stride = p->epi_batch_stride[0];
  const float* C = p->epi[0]; float* D = p->d;
  for (long l = 0; l < p->l; ++l)
    for (long i = 0; i < p->m; ++i)
      for (long j = 0; j < p->n; ++j) {
        float v = gemm_at(p, l, i, j, b_row);
        v += mn ? C[l * p->epi_batch_stride[0] + i * p->epi_ld[0] + j] : C[j];
        D[l * p->batch_stride_d + i * p->ldd + j] = v > 0.0f ? v : 0.0f;
      }
  return 0;
}
#define FUSED(sym, b_row, mn, label)                                                      \
  int sym##_can_implement(const FactGemmArgs* a) { return a->k > 0 ? 0 : 1; }             \
  size_t sym##_workspace_bytes(const FactGemmArgs* a) { return 64; }                      \
  int sym##_run(const FactGemmArgs* p, void* ws, size_t n, void* s) {                     \
    return fused_run(p, ws, n, b_row, mn); }                                              \
  const char* sym##_name(void) { return label; }
FUSED(fen, 0, 0, "fake_host_gemm_f32_tn_evt_relu_add_c0n")
FUSED(femn, 1, 1, "fake_host_gemm_f32_nn_evt_relu_add_c0mn")

/* ftail stands in for a tail kernel: D = relu(C + c0) with C in a (lda, batch_stride_a) and
 * c0 a vector along N; it is given no B. */
long long ft_last_lda = -1;
int ftail_can_implement(const FactGemmArgs* p) { return p->a && p->d ? 0 : FACT_ERR_PROBLEM; }
size_t ftail_workspace_bytes(const FactGemmArgs* p) { return 0; }
int ftail_run(const FactGemmArgs* p, void* ws, size_t n, void* s) {
  if (!p->a || !p->d) return FACT_ERR_PROBLEM;
  if (p->epi[0] == 0) return FACT_ERR_EPILOGUE_INPUT;
  if (p->b) return 8;
  ft_last_lda = p->lda;
  const float *C = p->a, *c0 = p->epi[0];
  float* D = p->d;
  for (long l = 0; l < p->l; ++l)
    for (long i = 0; i < p->m; ++i)
      for (long j = 0; j < p->n; ++j) {
        const float v = C[l * p->batch_stride_a + i * p->lda + j] + c0[j];
        D[l * p->batch_stride_d + i * p->ldd + j] = v > 0.0f ? v : 0.0f;
      }
  return 0;
}
const char* ftail_name(void) { return "fake_host_tail_f32_relu_add_c0n"; }
"""


class _Linear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


@pytest.fixture
def fake_library(tmp_path, build_c_library) -> str:
    src = tmp_path / "fake.c"
    src.write_text(_FAKE_KERNEL)
    return build_c_library("gemm/abi.h", str(src), "libfake.so")


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
    art = write_artifact(tmp_path, graph, [pattern], lib)
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


def test_checks_are_kept_per_signature(tmp_path, fake_library: str) -> None:
    """can_implement runs once per shape/stride/dtype/alignment signature: new tensors of a
    signature seen before (new addresses, new D) skip it; a misaligned view is a new
    signature, refused by the family's check, and its answer is kept too."""
    art, model = _cutlass_artifact(tmp_path, fake_library)
    fm = load(art, model)
    binding = fm.bindings["p0"]
    binding.device_type = "cpu"
    calls = ctypes.c_int.in_dll(ctypes.CDLL(os.path.join(art, "libfact_kernels.so")),
                                "fk_can_implement_calls")
    for _ in range(3):
        x = torch.randn(4, 16)
        torch.testing.assert_close(fm(x), model(x), rtol=1e-5, atol=1e-5)
    assert calls.value == 1 and fm.fallback_counts() == {"p0": 0}
    base = torch.randn(4 * 16 + 1)
    for _ in range(2):
        x = base[1:].view(4, 16)  # 4 bytes past a 16-byte boundary, the plan's strides
        assert torch.equal(fm(x), model(x))
    assert fm.fallback_reasons() == {"p0": {"x is not 16-byte aligned": 2}}
    assert calls.value == 1
    assert len(binding._checked) == 2


def test_args_struct_matches_the_c_header(fake_library: str) -> None:
    lib = ctypes.CDLL(fake_library)
    for fn in ("fk_sizeof_args", "fk_offsetof_epi", "fk_offsetof_epi_batch_stride"):
        getattr(lib, fn).restype = ctypes.c_size_t
    assert ctypes.sizeof(FactGemmArgs) == lib.fk_sizeof_args()
    assert FactGemmArgs.epi.offset == lib.fk_offsetof_epi()
    assert FactGemmArgs.epi_batch_stride.offset == lib.fk_offsetof_epi_batch_stride()


# --------------------------------------------------------------- fused epilogues

class _LinearAddRelu(nn.Module):
    """linear, then + a vector along N, then relu: a GEMM with a fusable tail."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 8)
        self.v = nn.Parameter(torch.randn(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x) + self.v)


_LINEAR_PROBLEM = {"kind": "gemm", "m": 4, "n": 8, "k": 16, "l": 1, "layout_a": "row",
                   "layout_b": "col", "lda": 16, "ldb": 16, "ldd": 8, "batch_stride_a": 0,
                   "batch_stride_b": 0, "batch_stride_d": 0, "bias": "n", "alpha": 1.0,
                   "beta": 1.0}
_LINEAR_EPILOGUE = {"nodes": ["add", "relu"], "output": "relu", "expr": "relu(add(acc, c0))",
                    "tree": {"op": "relu", "args": [{"op": "add", "args": [
                        {"acc": True}, {"input": "c0"}]}]},
                    "inputs": {"c0": "p_v"}, "broadcast": {"c0": "n"},
                    "saved_bytes": 256, "gain_us": 0.0}


def _linear_tail_artifact(tmp_path, lib: str, fused: bool, symbol: str,
                          epilogue_key: str = "absent") -> tuple[str, nn.Module]:
    model = _LinearAddRelu()
    graph = export(model, [torch.randn(4, 16)])
    assert [n["name"] for n in graph["nodes"]] == ["linear", "add", "relu"]
    pattern = {"id": "p0", "rule": "gemm", "operands": {"a": "x", "b": "p_fc_weight",
                                                         "bias": "p_fc_bias"},
               "problem": _LINEAR_PROBLEM, "impl": "cutlass", "symbol": symbol,
               "kernel": f"{symbol}_kernel", "workspace_bytes": 0, "verified": True}
    if fused:
        pattern.update(nodes=["linear", "add", "relu"], output="relu", fused=True,
                       epilogue=_LINEAR_EPILOGUE)
    else:
        pattern.update(nodes=["linear"], output="linear")
        if epilogue_key == "null":
            pattern.update(epilogue=None, fused=False)
    art = write_artifact(tmp_path, graph, [pattern], lib)
    return art, model


def test_fused_pattern_runs_the_tail_in_the_kernel(tmp_path, fake_library: str) -> None:
    art, model = _linear_tail_artifact(tmp_path, fake_library, fused=True, symbol="fen")
    fm = load(art, model)
    binding = fm.bindings["p0"]
    assert binding.call.epilogue is not None and binding.input_names[-1] == "p_v"
    # Every node belongs to the fused kernel: the tail does not run as ATen ops.
    assert fm.aten_nodes() == []
    x = torch.randn(4, 16)
    with torch.no_grad():
        want = model(x)
    # On CPU tensors the kernel is refused: the fallback runs GEMM and tail in ATen.
    assert torch.equal(fm(x), want)
    assert fm.fallback_counts() == {"p0": 1}
    binding.device_type = "cpu"
    out = fm(x)
    assert fm.fallback_counts() == {"p0": 1}
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    assert (out == 0).any() and (out > 0).any()  # relu was applied, once
    lib = ctypes.CDLL(os.path.join(art, "libfact_kernels.so"))
    assert ctypes.c_longlong.in_dll(lib, "fe_last_epi_ld").value == 0  # a vector: no ld
    assert ctypes.c_longlong.in_dll(lib, "fe_last_epi_batch_stride").value == 0
    args = binding.args([x, fm.p_fc_weight, fm.p_fc_bias, fm.p_v], out)
    assert args.epi[0] == fm.p_v.data_ptr() and not any(args.epi[1:])


@pytest.mark.parametrize("epilogue_key", ["absent", "null"])
def test_unfused_pattern_leaves_the_tail_to_aten(tmp_path, fake_library: str,
                                                 epilogue_key: str) -> None:
    art, model = _linear_tail_artifact(tmp_path, fake_library, fused=False, symbol="fk",
                                       epilogue_key=epilogue_key)
    fm = load(art, model)
    binding = fm.bindings["p0"]
    binding.device_type = "cpu"
    assert binding.call.epilogue is None
    assert fm.aten_nodes() == ["add", "relu"]
    x = torch.randn(4, 16)
    with torch.no_grad():
        torch.testing.assert_close(fm(x), model(x), rtol=1e-5, atol=1e-5)
    assert fm.fallback_counts() == {"p0": 0}
    lib = ctypes.CDLL(os.path.join(art, "libfact_kernels.so"))
    assert ctypes.c_int.in_dll(lib, "fk_last_epi_null").value == 1


def test_vendor_gemm_with_a_tail_kernel_runs_the_tail_as_one_call(tmp_path,
                                                                   fake_library: str) -> None:
    # The vendor path won the GEMM; its tail runs as the tail kernel, the entry compose
    # writes as the pattern's "tail" (docs/05-composition.md, "Vendor GEMM, fused tail").
    model = _LinearAddRelu()
    graph = export(model, [torch.randn(4, 16)])
    tail_problem = {"kind": "gemm", "m": 4, "n": 8, "k": 0, "l": 1, "dtype_a": "float32",
                    "dtype_b": "float32", "dtype_d": "float32", "lda": 8, "ldb": 0, "ldd": 8,
                    "batch_stride_a": 0, "batch_stride_d": 0, "bias": None}
    tail = {"id": "p0_tail", "rule": "gemm", "abi": "gemm", "impl": "cutlass",
            "kernel": "fact_tail_f32_evt00000000", "symbol": "ftail", "nodes": ["add", "relu"],
            "output": "relu", "operands": {"a": "linear"}, "problem": tail_problem,
            "fused": True, "epilogue": _LINEAR_EPILOGUE, "workspace_bytes": 0}
    pattern = {"id": "p0", "rule": "gemm", "abi": "gemm", "nodes": ["linear"], "output": "linear",
               "operands": {"a": "x", "b": "p_fc_weight", "bias": "p_fc_bias"},
               "problem": _LINEAR_PROBLEM, "impl": "vendor", "kernel": "cublaslt_tf32+tail",
               "symbol": None, "workspace_bytes": 0, "verified": True, "tail": tail}
    art = write_artifact(tmp_path, graph, [pattern], fake_library)
    fm = load(art, model)
    assert list(fm.bindings) == ["p0_tail"]
    binding = fm.bindings["p0_tail"]
    assert binding.input_names == ["linear", "p_v"]
    # The GEMM runs as its ATen op, the tail's two nodes as one kernel call.
    assert fm.aten_nodes() == ["linear"]
    x = torch.randn(4, 16)
    with torch.no_grad():
        want = model(x)
    assert torch.equal(fm(x), want)  # CPU tensors: the fallback runs the tail's ATen nodes
    assert fm.fallback_counts() == {"p0_tail": 1}
    binding.device_type = "cpu"
    out = fm(x)
    assert fm.fallback_counts() == {"p0_tail": 1}
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    assert (out == 0).any() and (out > 0).any()
    lib = ctypes.CDLL(os.path.join(art, "libfact_kernels.so"))
    assert ctypes.c_longlong.in_dll(lib, "ft_last_lda").value == 8
    c = torch.randn(4, 8)
    args = binding.args([c, fm.p_v], out)
    assert args.a == c.data_ptr() and not args.b and args.epi[0] == fm.p_v.data_ptr()


def test_fused_kernel_without_its_inputs_names_the_error(tmp_path, fake_library: str) -> None:
    # A manifest that forgets "fused" for a fused kernel: the kernel sees epi[0] NULL.
    art, model = _linear_tail_artifact(tmp_path, fake_library, fused=False, symbol="fen")
    fm = load(art, model)
    fm.bindings["p0"].device_type = "cpu"
    with pytest.raises(RuntimeError, match="code 5 .FACT_ERR_EPILOGUE_INPUT"):
        fm(torch.randn(4, 16))


def test_inconsistent_fused_pattern_is_an_artifact_error(tmp_path, fake_library: str) -> None:
    model = _LinearAddRelu()
    graph = export(model, [torch.randn(4, 16)])
    base = {"id": "p0", "rule": "gemm", "nodes": ["linear", "add", "relu"], "output": "relu",
            "operands": {"a": "x", "b": "p_fc_weight", "bias": "p_fc_bias"},
            "problem": _LINEAR_PROBLEM, "impl": "cutlass", "symbol": "fen", "kernel": "k",
            "workspace_bytes": 0, "verified": True, "fused": True}
    bad = {"no epilogue": dict(base, epilogue=None),
           "not the epilogue's": dict(base, output="add", nodes=["linear", "add"],
                                      epilogue=_LINEAR_EPILOGUE),
           "c4": dict(base, epilogue=dict(_LINEAR_EPILOGUE, inputs={"c4": "p_v"})),
           "not an input": dict(base, epilogue=dict(_LINEAR_EPILOGUE, inputs={"c0": "x9"}))}
    for i, (match, pattern) in enumerate(bad.items()):
        sub = tmp_path / f"case{i}"
        sub.mkdir()
        art = write_artifact(sub, graph, [pattern], fake_library)
        with pytest.raises(ArtifactError, match=match):
            load(art, model)


class _BmmAddRelu(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(torch.bmm(a, b) + y)


def test_fused_tensor_input_gets_its_strides(tmp_path, fake_library: str) -> None:
    # c0 has D's shape [2, 4, 8] but lives in a wider buffer: rows 12 apart, batches 48.
    model = _BmmAddRelu()
    a, b = torch.randn(2, 4, 16), torch.randn(2, 16, 8)
    y = torch.randn(2, 4, 12)[:, :, :8]
    graph = export(model, [a, b, y])
    assert graph["inputs"][2]["type"]["strides"] == [48, 12, 1]
    names = [n["name"] for n in graph["nodes"]]
    assert names == ["bmm", "add", "relu"]
    problem = {"kind": "gemm", "m": 4, "n": 8, "k": 16, "l": 2, "layout_a": "row",
               "layout_b": "row", "lda": 16, "ldb": 8, "ldd": 8, "batch_stride_a": 64,
               "batch_stride_b": 128, "batch_stride_d": 32, "bias": None, "alpha": 1.0,
               "beta": 0.0}
    epilogue = dict(_LINEAR_EPILOGUE, inputs={"c0": "y"}, broadcast={"c0": "mn"})
    pattern = {"id": "p0", "rule": "gemm", "nodes": names, "output": "relu",
               "operands": {"a": "a", "b": "b"}, "problem": problem, "impl": "cutlass",
               "symbol": "femn", "kernel": "femn_kernel", "workspace_bytes": 0,
               "verified": True, "fused": True, "epilogue": epilogue}
    art = write_artifact(tmp_path, graph, [pattern], fake_library)
    fm = load(art, model)
    fm.bindings["p0"].device_type = "cpu"
    assert fm.aten_nodes() == []
    out = fm(a, b, y)
    assert fm.fallback_counts() == {"p0": 0}
    torch.testing.assert_close(out, model(a, b, y), rtol=1e-5, atol=1e-5)
    lib = ctypes.CDLL(os.path.join(art, "libfact_kernels.so"))
    assert ctypes.c_longlong.in_dll(lib, "fe_last_epi_ld").value == 12
    assert ctypes.c_longlong.in_dll(lib, "fe_last_epi_batch_stride").value == 48
    # A contiguous y no longer matches the plan's strides: ATen fallback, still right.
    yc = y.contiguous()
    assert torch.equal(fm(a, b, yc), model(a, b, yc))
    assert "strides [32, 8, 1]" in fm.bindings["p0"].last_fallback_reason


