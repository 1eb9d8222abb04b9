"""The rope family (python/fact/families/rope.py) in the runtime, on CPU: FactRopeArgs is
filled from the operands' strides (cos/sin broadcast with stride 0), the output is allocated
with the strides the graph recorded for it (the layout the attention after it was planned
for, no copy between), and the runtime runs end to end against a host-memory stand-in rope
library (tests/python/fake_rope.c, built from src/families/rope/abi.h) that computes the
rotation through the ABI. The plans are the real engine's (factc discover)."""

from __future__ import annotations

import ctypes
import os

import pytest
import torch
import torch.nn as nn

from artifacts import write_artifact
from attention_cases import discover_plan
from fact.export import export
from fact.families.rope import FactRopeArgs, check_pattern, leading_strides
from fact.runtime import load


@pytest.fixture
def rope_library(build_c_library) -> str:
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fake_rope.c")
    return build_c_library("rope/abi.h", src, "libfake_rope.so")


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x: torch.Tensor) -> torch.Tensor:
    return torch.stack((-x[..., 1::2], x[..., ::2]), dim=-1).flatten(-2)


class Rope(nn.Module):
    """q = view(x).transpose(1, 2), then x * cos + rotate(x) * sin with [1, 1, T, D] tables
    (the Llama block's spelling) or, for ``pairs``, GPT-J's interleaved form with [T, D]."""

    def __init__(self, t: int = 8, h: int = 4, d: int = 16, pairs: bool = False) -> None:
        super().__init__()
        self.h, self.d, self.pairs = h, d, pairs
        angle = torch.arange(t).float()[:, None] * torch.rand(d)[None, :]
        shape = (t, d) if pairs else (1, 1, t, d)
        self.register_buffer("cos", angle.cos().reshape(shape), persistent=False)
        self.register_buffer("sin", angle.sin().reshape(shape), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q = x.view(b, t, self.h, self.d).transpose(1, 2)
        rot = rotate_every_two(q) if self.pairs else rotate_half(q)
        return (q * self.cos + rot * self.sin) * 2.0  # a reader after it, as the attention is


def _artifact(tmp_path, model: nn.Module, inputs, lib: str, symbol: str):
    graph = export(model, inputs)
    plan = discover_plan(tmp_path, graph)
    entries = []
    rope = None
    for p in plan["patterns"]:
        e = {"id": p["id"], "rule": p["rule"], "abi": p["rule"], "nodes": p["nodes"],
             "output": p["output"], "operands": p["operands"], "problem": p["problem"],
             "impl": "vendor", "kernel": None, "symbol": None, "workspace_bytes": 0}
        if p["rule"] == "rope":
            e.update(impl="cutlass", kernel=symbol, symbol=symbol, verified=True)
            rope = e
        entries.append(e)
    assert rope is not None, plan["rejected"]
    return write_artifact(tmp_path, graph, entries, lib), rope, graph


def _last(art: str) -> FactRopeArgs:
    return FactRopeArgs.in_dll(ctypes.CDLL(os.path.join(art, "libfact_kernels.so")), "fr_last")


def test_rope_args_struct_matches_the_c_header(rope_library: str) -> None:
    lib = ctypes.CDLL(rope_library)
    for fn in ("fr_sizeof_args", "fr_field_count", "fr_field_offset"):
        getattr(lib, fn).restype = ctypes.c_size_t
    lib.fr_field_offset.argtypes = [ctypes.c_size_t]
    fields = [f[0] for f in FactRopeArgs._fields_]
    assert ctypes.sizeof(FactRopeArgs) == lib.fr_sizeof_args()
    assert len(fields) == lib.fr_field_count()
    for i, name in enumerate(fields):
        assert getattr(FactRopeArgs, name).offset == lib.fr_field_offset(i), name


@pytest.mark.parametrize("pairs", [False, True])
def test_rope_runs_on_the_transposed_view_and_writes_the_graphs_layout(tmp_path, rope_library,
                                                                        pairs) -> None:
    torch.manual_seed(0)
    model = Rope(pairs=pairs)
    x = torch.randn(2, 8, 64)
    art, entry, graph = _artifact(tmp_path, model, [x], rope_library, "fr_pairs" if pairs else "fr_half")
    assert entry["problem"]["form"] == ("pairs" if pairs else "half")
    assert entry["problem"]["dims"] == [2, 4, 8] and entry["problem"]["head_dim"] == 16
    fm = load(art, model)
    binding = fm.bindings[entry["id"]]
    binding.device_type = "cpu"
    ops = {n["name"]: n["op"] for n in graph["nodes"]}
    assert not {ops[n] for n in fm.aten_nodes()} & {"aten.cat.default", "aten.stack.default", "aten.neg.default"}
    with torch.no_grad():
        out, want = fm(x), model(x)
    torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-6)
    assert not fm.fallback_counts().get(entry["id"])
    a = _last(art)
    # q is the [B, T, H, D] projection seen as [B, H, T, D]; the tables broadcast over B, H;
    # out has the graph's strides for the pattern's output, here q's own layout.
    assert (a.n0, a.n1, a.n2, a.head_dim) == (2, 4, 8, 16)
    assert (a.x_stride0, a.x_stride1, a.x_stride2) == (512, 16, 64)
    assert (a.cos_stride0, a.cos_stride1, a.cos_stride2) == (0, 0, 16)
    out_type = next(n for n in graph["nodes"] if n["name"] == entry["output"])["outputs"][0]["type"]
    assert [a.out_stride0, a.out_stride1, a.out_stride2] == out_type["strides"][:3]


def test_operands_the_kernel_cannot_read_fall_back(tmp_path, rope_library) -> None:
    torch.manual_seed(0)
    model = Rope()
    x = torch.randn(2, 8, 64)
    art, entry, _ = _artifact(tmp_path, model, [x], rope_library, "fr_half")
    fm = load(art, model)
    binding = fm.bindings[entry["id"]]
    binding.device_type = "cpu"
    q = x.view(2, 8, 4, 16).transpose(1, 2)
    # A table whose last dim is strided: not one the kernel reads with vector loads.
    bad = torch.randn(1, 1, 8, 32)[..., ::2]
    assert leading_strides(bad, list(q.shape)) is None
    reason = binding.mismatch([q, bad, model.sin])
    assert "cos of shape [1, 1, 8, 16]" in reason and "unit-stride last dim" in reason
    assert leading_strides(torch.randn(8, 16), [2, 4, 8, 16]) == (0, 0, 16)
    assert leading_strides(torch.randn(3, 16), [2, 4, 8, 16]) is None  # does not broadcast


def test_check_pattern_names_what_is_wrong() -> None:
    problem = {"kind": "rope", "form": "half", "dims": [2, 4, 8], "head_dim": 16, "dtype": "float32",
               "strides": {"x": [512, 16, 64], "cos": [0, 0, 16], "sin": [0, 0, 16],
                           "out": [512, 16, 64]}}
    types = {"q": {"dtype": "float32", "shape": [2, 4, 8, 16], "strides": [512, 16, 64, 1]},
             "c": {"dtype": "float32", "shape": [1, 1, 8, 16], "strides": [128, 128, 16, 1]}}
    ok = {"problem": problem, "operands": {"x": "q", "cos": "c", "sin": "c"}}
    check_pattern(ok, types)
    with pytest.raises(ValueError, match="operand sin is missing"):
        check_pattern({**ok, "operands": {"x": "q", "cos": "c"}}, types)
    with pytest.raises(ValueError, match="unknown rope form"):
        check_pattern({**ok, "problem": {**problem, "form": "complex"}}, types)
    with pytest.raises(ValueError, match="operand cos c is bfloat16"):
        check_pattern(ok, {**types, "c": {**types["c"], "dtype": "bfloat16"}})
    with pytest.raises(ValueError, match="head_dim 15"):
        check_pattern({**ok, "problem": {**problem, "head_dim": 15}}, types)


class RopeInForward(nn.Module):
    """Hugging Face's LlamaRotaryEmbedding spelling: the tables built in forward from the
    ``inv_freq`` buffer and the positions ``arange(T)`` (or, with ``positions_in``, positions
    given as an input), then the half-split rotation of q."""

    def __init__(self, h: int = 4, d: int = 16, positions_in: bool = False) -> None:
        super().__init__()
        self.h, self.d, self.positions_in = h, d, positions_in
        self.register_buffer("inv_freq", 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d)),
                             persistent=False)

    def tables(self, x: torch.Tensor, pos: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        inv = self.inv_freq[None, :, None].float().expand(pos.shape[0], -1, 1)
        freqs = (inv @ pos[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return (emb.cos() * 1.0).to(x.dtype), (emb.sin() * 1.0).to(x.dtype)

    def forward(self, x: torch.Tensor, *positions: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        pos = positions[0] if self.positions_in else torch.arange(t, device=x.device).unsqueeze(0)
        cos, sin = self.tables(x, pos)
        q = x.view(b, t, self.h, self.d).transpose(1, 2)
        return (q * cos[:, None] + rotate_half(q) * sin[:, None]) * 2.0


_TABLE_OPS = {"aten.cos.default", "aten.sin.default", "aten.matmul.default", "aten.arange.default",
              "aten.arange.start", "aten.cat.default"}


@pytest.mark.parametrize("positions_in", [False, True])
def test_tables_of_constants_are_computed_once_at_load(tmp_path, rope_library, positions_in) -> None:
    """From the inv_freq buffer and constant positions the cos/sin tables are load-time
    buffers of the generated module and none of their ops runs per call; from positions
    given as an input they are computed per call. Either way the output is eager's."""
    torch.manual_seed(0)
    model = RopeInForward(positions_in=positions_in)
    x = torch.randn(2, 8, 64)
    inputs = [x, torch.arange(8).unsqueeze(0)] if positions_in else [x]
    art, entry, graph = _artifact(tmp_path, model, inputs, rope_library, "fr_half")
    fm = load(art, model)
    fm.bindings[entry["id"]].device_type = "cpu"
    ops = {n["name"]: n["op"] for n in graph["nodes"]}
    per_call = {ops[n] for n in fm.aten_nodes()} & _TABLE_OPS
    tables = [name for name, _ in fm.named_buffers() if name.startswith("fact_table_")]
    if positions_in:
        assert tables == [] and per_call >= {"aten.cos.default", "aten.sin.default"}
    else:
        cos, sin = entry["operands"]["cos"], entry["operands"]["sin"]
        assert sorted(tables) == sorted([f"fact_table_{cos}", f"fact_table_{sin}"])
        assert per_call == set(), per_call
        want_cos, _ = model.tables(x, torch.arange(8).unsqueeze(0))
        torch.testing.assert_close(getattr(fm, f"fact_table_{cos}"), want_cos[:, None], rtol=0, atol=0)
        assert "cos" not in fm.generated.code.replace("fact_table_", "")
    with torch.no_grad():
        out, want = fm(*inputs), model(*inputs)
    torch.testing.assert_close(out, want, rtol=1e-6, atol=1e-6)
    assert not fm.fallback_counts().get(entry["id"])
