"""The norm family (python/fact/families/norm.py) in the runtime, on CPU: FactNormArgs is
filled from the operands' row strides, the sum is written into a second output exactly when
the manifest lists it, and the runtime runs end to end against a host-memory stand-in norm
library (tests/python/fake_norm.c, built from src/families/norm/abi.h) that computes the
norms through the ABI. The plans are the real engine's (factc discover)."""

from __future__ import annotations

import ctypes
import json
import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from artifacts import write_artifact
from attention_cases import discover_plan
from fact.export import export
from fact.families.norm import FactNormArgs, check_pattern, row_stride
from fact.runtime import ArtifactError, load


@pytest.fixture
def norm_library(build_c_library) -> str:
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fake_norm.c")
    return build_c_library("norm/abi.h", src, "libfake_norm.so", ("-lm",))


class PreNorm(nn.Module):
    """minGPT's second half: h = x + y; h + fc(ln(h)) (the sum is read after the norm)."""

    def __init__(self, c: int = 32) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(c)
        self.fc = nn.Linear(c, c)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = x + y
        return h + self.fc(self.ln(h))


class PostNorm(nn.Module):
    """BERT's: LN(x + y) (the sum is not read after)."""

    def __init__(self, c: int = 32) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(c, eps=1e-12)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.ln(x + y)


class LlamaNorm(nn.Module):
    """Llama's RMSNorm written out with its casts."""

    def __init__(self, c: int = 32) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-5)
        return self.weight * h.type_as(x)


class LlamaAddNorm(LlamaNorm):
    """Llama's h = x + y; h + fc(rms(h)): ``h.float()`` of fp32 h exports an assertion on the
    sum, which sits between the sum's node and the norm's output in graph order."""

    def __init__(self, c: int = 32) -> None:
        super().__init__(c)
        self.fc = nn.Linear(c, c)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = x + y
        return h + self.fc(super().forward(h))


def _artifact(tmp_path, model: nn.Module, inputs, lib: str, symbol: str):
    """The model's graph, the engine's plan, and a manifest whose norm pattern runs `symbol`
    (every other pattern vendor); returns (artifact dir, the norm manifest entry)."""
    graph = export(model, inputs)
    plan = discover_plan(tmp_path, graph)
    entries = []
    for p in plan["patterns"]:
        e = {"id": p["id"], "rule": p["rule"], "abi": p["rule"], "nodes": p["nodes"],
             "output": p["output"], "operands": p["operands"], "problem": p["problem"],
             "impl": "vendor", "kernel": None, "symbol": None, "workspace_bytes": 0}
        if p["rule"] == "norm":
            e.update(impl="cutlass", kernel=symbol, symbol=symbol, verified=True)
            if p["problem"]["sum_output"]:
                e["extra_outputs"] = {"sum": p["problem"]["sum_output"]}
            norm = e
        entries.append(e)
    return write_artifact(tmp_path, graph, entries, lib), norm


def _last(art: str) -> FactNormArgs:
    return FactNormArgs.in_dll(ctypes.CDLL(os.path.join(art, "libfact_kernels.so")), "fn_last")


def test_norm_args_struct_matches_the_c_header(norm_library: str) -> None:
    lib = ctypes.CDLL(norm_library)
    for fn in ("fn_sizeof_args", "fn_field_count", "fn_field_offset"):
        getattr(lib, fn).restype = ctypes.c_size_t
    lib.fn_field_offset.argtypes = [ctypes.c_size_t]
    fields = [f[0] for f in FactNormArgs._fields_]
    assert ctypes.sizeof(FactNormArgs) == lib.fn_sizeof_args()
    assert len(fields) == lib.fn_field_count()
    for i, name in enumerate(fields):
        assert getattr(FactNormArgs, name).offset == lib.fn_field_offset(i), name


def test_pre_norm_writes_the_sum_and_skips_the_aten_add(tmp_path, norm_library: str) -> None:
    torch.manual_seed(0)
    model = PreNorm()
    x, y = torch.randn(2, 8, 32), torch.randn(2, 8, 32)
    art, entry = _artifact(tmp_path, model, [x, y], norm_library, "fn_ln_rwb")
    assert entry["nodes"] == ["add", "layer_norm"] and entry["extra_outputs"] == {"sum": "add"}
    fm = load(art, model)
    binding = fm.bindings[entry["id"]]
    binding.device_type = "cpu"
    assert binding.input_names[:4] == ["x", "y", "p_ln_weight", "p_ln_bias"]
    assert "add" not in fm.aten_nodes()  # the kernel writes the sum
    with torch.no_grad():
        want = model(x, y)
        out = fm(x, y)
    assert not fm.fallback_counts().get(entry["id"])
    torch.testing.assert_close(out, want, rtol=1e-5, atol=1e-5)
    a = _last(art)
    assert (a.rows, a.cols, a.x_row_stride, a.residual_row_stride) == (16, 32, 32, 32)
    assert a.sum is not None and a.sum_row_stride == 32 and a.out_row_stride == 32
    assert a.eps == pytest.approx(1e-5)


def test_post_norm_passes_no_sum(tmp_path, norm_library: str) -> None:
    torch.manual_seed(0)
    model = PostNorm()
    x, y = torch.randn(2, 8, 32), torch.randn(2, 8, 32)
    art, entry = _artifact(tmp_path, model, [x, y], norm_library, "fn_ln_rwb")
    assert "extra_outputs" not in entry
    fm = load(art, model)
    fm.bindings[entry["id"]].device_type = "cpu"
    with torch.no_grad():
        torch.testing.assert_close(fm(x, y), model(x, y), rtol=1e-5, atol=1e-5)
    a = _last(art)
    assert a.sum is None and a.residual is not None and a.eps == pytest.approx(1e-12, rel=1e-6)


def test_llama_rms_norm_reads_strided_rows_in_place(tmp_path, norm_library: str) -> None:
    torch.manual_seed(0)
    model = LlamaNorm()
    x = torch.randn(2, 8, 32)
    art, entry = _artifact(tmp_path, model, [x], norm_library, "fn_rms_nwn")
    assert entry["problem"]["norm"] == "rms" and entry["operands"]["weight"] == "p_weight"
    fm = load(art, model)
    binding = fm.bindings[entry["id"]]
    binding.device_type = "cpu"
    with torch.no_grad():
        torch.testing.assert_close(fm(x), model(x), rtol=1e-5, atol=1e-5)
        # Every other row of a [2, 16, 32] tensor: rows 64 elements apart, read in place.
        wide = torch.randn(2, 16, 32)[:, ::2]
        assert row_stride(wide) == 64
        a = binding.args([wide, model.weight.detach()], torch.empty(2, 8, 32))
    assert a.x == wide.data_ptr() and a.x_row_stride == 64 and a.residual is None and a.bias is None


def test_a_reader_of_the_sum_before_the_norm_output_runs_after_the_kernel(
        tmp_path, norm_library: str) -> None:
    """The kernel writes the sum at the norm's output node; the export's assertion on the sum
    (and any reader placed before that node) runs after the kernel, not on a missing value."""
    torch.manual_seed(0)
    model = LlamaAddNorm()
    x, y = torch.randn(2, 8, 32), torch.randn(2, 8, 32)
    art, entry = _artifact(tmp_path, model, [x, y], norm_library, "fn_rms_rwn")
    graph = json.load(open(os.path.join(art, "graph.json")))
    order = [n["name"] for n in graph["nodes"]]
    sum_value = entry["extra_outputs"]["sum"]
    early = [n["name"] for n in graph["nodes"]
             if order.index(n["name"]) < order.index(entry["output"])
             and n["name"] not in entry["nodes"] and sum_value in json.dumps(n["args"])]
    assert early, "the graph has no reader of the sum before the norm's output"
    fm = load(art, model)
    fm.bindings[entry["id"]].device_type = "cpu"
    with torch.no_grad():
        torch.testing.assert_close(fm(x, y), model(x, y), rtol=1e-5, atol=1e-5)
    assert not fm.fallback_counts().get(entry["id"])
    assert _last(art).sum is not None


def test_rows_the_kernel_cannot_read_fall_back(tmp_path, norm_library: str) -> None:
    torch.manual_seed(0)
    model = LlamaNorm()
    x = torch.randn(2, 8, 32)
    art, entry = _artifact(tmp_path, model, [x], norm_library, "fn_rms_nwn")
    fm = load(art, model)
    binding = fm.bindings[entry["id"]]
    binding.device_type = "cpu"
    # A transposed view: the last dim is not unit stride.
    t = torch.randn(2, 32, 8).transpose(1, 2)
    assert row_stride(t) is None
    assert "not rows of unit-stride" in binding.mismatch([t, model.weight.detach()])
    # [4, 2, 32] rows of a [4, 3, 32] tensor: rows 32 apart, then a jump of 96: uneven.
    assert row_stride(torch.randn(4, 3, 32)[:, :2]) is None


def test_check_pattern_names_what_is_wrong(tmp_path) -> None:
    problem = {"kind": "norm", "norm": "layer", "rows": 16, "cols": 32, "dtype": "float32",
               "out_dtype": "float32", "param_dtype": "float32", "eps": 1e-5, "weight": True,
               "bias": False, "residual": True, "sum_output": "add",
               "strides": {"x": 32, "residual": 32}}
    types = {"x": {"dtype": "float32", "shape": [2, 8, 32], "strides": [256, 32, 1]},
             "y": {"dtype": "float32", "shape": [2, 8, 32], "strides": [256, 32, 1]},
             "w": {"dtype": "float32", "shape": [32], "strides": [1]}}
    ok = {"problem": problem, "operands": {"x": "x", "residual": "y", "weight": "w"},
          "extra_outputs": {"sum": "add"}}
    check_pattern(ok, types)
    with pytest.raises(ValueError, match="operand bias is not in the problem"):
        check_pattern({**ok, "operands": {**ok["operands"], "bias": "w"}}, types)
    with pytest.raises(ValueError, match="not 16 rows of 32"):
        check_pattern(ok, {**types, "y": {**types["y"], "shape": [2, 4, 32]}})
    with pytest.raises(ValueError, match="extra output sum"):
        check_pattern({**ok, "extra_outputs": {"sum": "other"}}, types)
    with pytest.raises(ValueError, match="lacks eps"):
        check_pattern({**ok, "problem": {k: v for k, v in problem.items() if k != "eps"}}, types)


def test_an_extra_output_the_nodes_do_not_make_is_an_artifact_error(tmp_path, norm_library) -> None:
    torch.manual_seed(0)
    model = PreNorm()
    x, y = torch.randn(2, 8, 32), torch.randn(2, 8, 32)
    art, entry = _artifact(tmp_path, model, [x, y], norm_library, "fn_ln_rwb")
    path = os.path.join(art, "manifest.json")
    m = json.loads(open(path).read())
    for p in m["patterns"]:
        if p["id"] == entry["id"]:
            p["extra_outputs"] = {"sum": "linear"}
            p["problem"]["sum_output"] = "linear"
    open(path, "w").write(json.dumps(m))
    with pytest.raises(ArtifactError, match="extra output sum = linear"):
        load(art, model)
