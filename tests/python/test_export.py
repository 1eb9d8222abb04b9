"""Export of small models, checked field by field against docs/02-graph-format.md."""

from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn as nn

from fact.export import ExportError, export, write_graph


def _f32(shape: list[int], strides: list[int]) -> dict:
    return {"dtype": "float32", "shape": shape, "strides": strides}


class _Linear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


def test_linear_graph_exactly() -> None:
    g = export(_Linear(), [torch.randn(4, 16)])
    assert g == {
        "format": "fact.graph", "version": 1, "name": "_Linear",
        "inputs": [{"name": "x", "kind": "user_input", "type": _f32([4, 16], [16, 1])}],
        "params": [
            {"name": "p_fc_weight", "kind": "parameter", "target": "fc.weight",
             "type": _f32([8, 16], [16, 1])},
            {"name": "p_fc_bias", "kind": "parameter", "target": "fc.bias",
             "type": _f32([8], [1])},
        ],
        "nodes": [
            {"name": "linear", "op": "aten.linear.default",
             "args": [{"ref": "x"}, {"ref": "p_fc_weight"}, {"ref": "p_fc_bias"}],
             "kwargs": {},
             "outputs": [{"name": "linear", "type": _f32([4, 8], [8, 1])}]},
        ],
        "outputs": [{"ref": "linear"}],
    }


class _MmTransposed(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.mm(a, b.t())


def test_mm_with_transposed_operand_has_column_major_strides() -> None:
    g = export(_MmTransposed(), [torch.randn(6, 5), torch.randn(7, 5)])
    assert [n["op"] for n in g["nodes"]] == ["aten.t.default", "aten.mm.default"]
    t, mm = g["nodes"]
    assert t["args"] == [{"ref": "b"}]
    assert t["outputs"] == [{"name": t["name"], "type": _f32([5, 7], [1, 5])}]
    assert mm["args"] == [{"ref": "a"}, {"ref": t["name"]}]
    assert mm["outputs"][0]["type"] == _f32([6, 7], [7, 1])
    assert g["outputs"] == [{"ref": mm["name"]}]
    assert g["params"] == []


class _Split(nn.Module):
    def forward(self, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        p, q = torch.split(y, 4, -1)
        return q, p * 2.0


def test_split_outputs_are_folded_into_indexed_names() -> None:
    g = export(_Split(), [torch.randn(8, 8)])
    split, mul = g["nodes"]  # no getitem nodes
    assert split["op"] == "aten.split.Tensor"
    assert split["args"] == [{"ref": "y"}, 4, -1]
    assert split["outputs"] == [
        {"name": "split.0", "type": _f32([8, 4], [8, 1])},
        {"name": "split.1", "type": _f32([8, 4], [8, 1])},
    ]
    assert mul["op"] == "aten.mul.Tensor"
    assert mul["args"] == [{"ref": "split.0"}, 2.0]
    assert g["outputs"] == [{"ref": "split.1"}, {"ref": mul["name"]}]


class _Gelu(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x, approximate="tanh") + 1.0


def test_gelu_string_kwarg_and_float_constant(tmp_path) -> None:
    g = export(_Gelu(), [torch.randn(3, 4)])
    gelu, add = g["nodes"]
    assert gelu["op"] == "aten.gelu.default"
    assert gelu["args"] == [{"ref": "x"}]
    assert gelu["kwargs"] == {"approximate": "tanh"}
    assert add["op"] == "aten.add.Tensor"
    assert add["args"][1] == 1.0 and isinstance(add["args"][1], float)
    path = tmp_path / "sub" / "graph.json"
    write_graph(g, path)
    text = path.read_text()
    assert '"approximate": "tanh"' in text
    assert "1.0" in text  # the float keeps its fractional part in JSON
    assert json.loads(text) == g


class _Consts(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mask", torch.ones(2, 3, dtype=torch.bool))
        self.scale = torch.full((3,), 0.5)  # a plain tensor attribute: a lifted constant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.masked_fill(self.mask, float("-inf"))
        z = torch.clamp(y, max=float("inf")) * self.scale
        return z.to(torch.float16)


def test_buffers_constants_nonfinite_floats_and_dtype_enums() -> None:
    g = export(_Consts(), [torch.randn(2, 3)])
    assert g["params"] == [
        {"name": "b_mask", "kind": "buffer", "target": "mask",
         "type": {"dtype": "bool", "shape": [2, 3], "strides": [3, 1]}},
        {"name": "c_scale", "kind": "constant", "target": "scale",
         "type": _f32([3], [1])},
    ]
    by_op = {n["op"]: n for n in g["nodes"]}
    assert by_op["aten.masked_fill.Scalar"]["args"] == [
        {"ref": "x"}, {"ref": "b_mask"}, {"float": "-inf"}]
    assert by_op["aten.clamp.default"]["args"] == [
        {"ref": "masked_fill"}, None, {"float": "inf"}]
    assert by_op["aten.mul.Tensor"]["args"] == [{"ref": "clamp"}, {"ref": "c_scale"}]
    check = by_op["aten._assert_tensor_metadata.default"]
    assert check["outputs"] == []  # no result: listed with no outputs
    assert check["kwargs"] == {"dtype": {"dtype": "float32"}, "device": {"device": "cpu"},
                               "layout": {"layout": "strided"}}
    to = by_op["aten.to.dtype"]
    assert to["args"] == [{"ref": "mul"}, {"dtype": "float16"}]
    assert to["outputs"] == [{"name": "to", "type": {"dtype": "float16", "shape": [2, 3],
                                                     "strides": [3, 1]}}]
    json.dumps(g, allow_nan=False)  # no bare NaN/Infinity in the JSON


class _VarMean(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var, mean = torch.var_mean(x, dim=1)
        return var + mean


def test_tuple_result_with_list_argument() -> None:
    g = export(_VarMean(), [torch.randn(4, 5)])
    vm = g["nodes"][0]
    assert vm["op"] == "aten.var_mean.dim"
    assert vm["args"] == [{"ref": "x"}, [1]]
    assert [o["name"] for o in vm["outputs"]] == ["var_mean.0", "var_mean.1"]
    assert g["nodes"][1]["args"] == [{"ref": "var_mean.0"}, {"ref": "var_mean.1"}]


class _DropLast(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:-1] * 2.0


def test_symbolic_sizes_stay_symbols_and_non_monomials_are_named() -> None:
    from fact.export import graph_from_program
    batch = torch.export.Dim("batch", min=2, max=64)
    ep = torch.export.export(_Linear(), (torch.randn(4, 16),),
                             dynamic_shapes={"x": {0: batch}})
    g = graph_from_program(ep)
    ((name, sym),) = g["symbols"].items()  # torch's name: no Dim names given here
    assert g["version"] == 2 and sym == {"min": 2, "max": 64, "seen": [4], "buckets": None}
    assert g["inputs"][0]["type"]["shape"] == [name, 16]
    # x[:-1] has batch - 1 rows: not a product of symbols, named with its value.
    ep = torch.export.export(_DropLast(), (torch.randn(4, 16),),
                             dynamic_shapes={"x": {0: torch.export.Dim("b", min=3, max=64)}})
    with pytest.raises(ExportError, match="not a product of symbols and integers"):
        graph_from_program(ep)


def test_nonfinite_float_encoding() -> None:
    from fact.export import _encode_arg
    assert _encode_arg(float("nan"), {}, "t") == {"float": "nan"}
    assert _encode_arg(-math.inf, {}, "t") == {"float": "-inf"}
    assert _encode_arg(True, {}, "t") is True
    assert _encode_arg(torch.device("cuda:0"), {}, "t") == {"device": "cuda:0"}
    assert _encode_arg(torch.strided, {}, "t") == {"layout": "strided"}
    assert _encode_arg(torch.contiguous_format, {}, "t") == \
        {"memory_format": "contiguous_format"}
    assert _encode_arg(torch.bfloat16, {}, "t") == {"dtype": "bfloat16"}


def test_package_functions_survive_submodule_imports() -> None:
    import fact
    import fact.export  # noqa: F401  (the submodule shares the function's name)
    import fact.optimize  # noqa: F401
    from fact.optimize import OptimizeOptions
    assert callable(fact.export) and callable(fact.optimize) and callable(fact.load)
    assert OptimizeOptions().trials == 20
    g = fact.export(_Linear(), [torch.randn(2, 16)])
    assert g["nodes"][0]["op"] == "aten.linear.default"


class _Masks(nn.Module):
    """A persistent float tril buffer, a non-persistent bool one, a triu buffer and a constant."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("causal", torch.tril(torch.ones(6, 6)).view(1, 1, 6, 6))
        self.register_buffer("keep", torch.ones(6, 6, dtype=torch.bool).tril(), persistent=False)
        self.register_buffer("upper", torch.triu(torch.ones(6, 6)))
        self.table = torch.tril(torch.ones(1, 6, 6, dtype=torch.int64))  # a lifted constant

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.masked_fill(self.causal == 0, 0.0).masked_fill(~self.keep, 1.0)
        return y + self.upper + self.table


def test_buffers_and_constants_record_their_value_class() -> None:
    g = export(_Masks(), [torch.randn(2, 1, 6, 6)])
    value = {p["target"]: p.get("value") for p in g["params"]}
    assert value == {"causal": "tril", "keep": "tril", "upper": None, "table": "tril"}
    kinds = {p["target"]: p["kind"] for p in g["params"]}
    assert kinds == {"causal": "buffer", "keep": "buffer", "upper": "buffer", "table": "constant"}


def test_value_class_needs_the_exact_triangle() -> None:
    from fact.export import value_class
    tril = torch.tril(torch.ones(4, 5))
    assert value_class(tril) == "tril"
    assert value_class(tril.bool().view(1, 1, 4, 5)) == "tril"
    assert value_class(tril.to(torch.bfloat16)) == "tril"
    assert value_class(tril.expand(2, 4, 5)) is None          # a leading dim of size 2
    assert value_class(tril * 2.0) is None                    # not 0/1
    assert value_class(torch.tril(torch.ones(4, 4), -1)) is None
    assert value_class(torch.tril(torch.rand(4, 4))) is None  # lower-triangular, not tril(ones)
    assert value_class(torch.ones(4)) is None                 # rank 1
    assert value_class(tril.to("meta")) is None               # no data to look at
    assert value_class(3) is None


class _TrilBuffer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(6, 6)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.masked_fill(self.bias == 0, float("-inf"))


def test_model_on_meta_records_no_value_class() -> None:
    # Meta tensors hold no data: the graph cannot claim what the buffer contains.
    on_cpu = export(_TrilBuffer(), [torch.randn(6, 6)])
    on_meta = export(_TrilBuffer().to("meta"), [torch.randn(6, 6, device="meta")])
    assert on_cpu["params"][0]["value"] == "tril"
    assert "value" not in on_meta["params"][0]


class _DeadBranch(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        unused = x.softmax(-1).mean(1)  # noqa: F841  (computed, never returned)
        return x * 2.0


def test_dead_nodes_are_left_out() -> None:
    g = export(_DeadBranch(), [torch.randn(3, 4)])
    assert [n["op"] for n in g["nodes"]] == ["aten.mul.Tensor"]


@pytest.mark.parametrize("extra", [3, None])
def test_a_model_returning_a_non_tensor_is_an_export_error(extra) -> None:
    class Returns(nn.Module):
        def forward(self, x):
            return x * 2, extra

    with pytest.raises(ExportError, match=r"graph output 1: the model returns .*not a tensor"):
        export(Returns(), [torch.randn(2, 3)])
