"""fact.export_regions: grad-mode and disabled-autocast regions inlined, others refused."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from fact.export import ExportError, export


class RotaryLike(nn.Module):
    """Hugging Face's rotary-embedding spelling: cos/sin under autocast(enabled=False), then
    a no_grad region, then ops outside both."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("inv_freq", torch.randn(8), persistent=False)

    def forward(self, x):
        with torch.autocast(device_type=x.device.type, enabled=False):
            freqs = x.float() @ self.inv_freq[:, None].expand(8, 4)
            cos = freqs.cos()
        with torch.no_grad():
            scaled = cos * 2
        return scaled + 1


def test_disabled_autocast_and_grad_regions_are_inlined() -> None:
    g = export(RotaryLike(), [torch.randn(3, 8)])
    ops = [n["op"] for n in g["nodes"]]
    assert ops == ["aten._assert_tensor_metadata.default", "aten.to.dtype", "aten.unsqueeze.default",
                   "aten.expand.default", "aten.matmul.default", "aten.cos.default", "aten.mul.Tensor",
                   "aten.add.Tensor"]
    by_name = {n["name"]: n for n in g["nodes"]}
    assert by_name["matmul"]["args"] == [{"ref": "to"}, {"ref": "expand"}]
    assert by_name["mul"]["args"] == [{"ref": "cos"}, 2]
    assert g["outputs"] == [{"ref": "add"}]
    assert by_name["cos"]["outputs"][0]["type"]["shape"] == [3, 4]


def test_nested_regions_are_inlined() -> None:
    class Nested(nn.Module):
        def forward(self, x):
            with torch.no_grad():
                with torch.autocast(device_type="cpu", enabled=False):
                    y = x.sin()
                z = y * 3
            return z - x

    g = export(Nested(), [torch.randn(5)])
    assert [n["op"] for n in g["nodes"]] == ["aten.sin.default", "aten.mul.Tensor", "aten.sub.Tensor"]
    assert g["nodes"][2]["args"] == [{"ref": "mul"}, {"ref": "x"}]


def test_an_enabled_autocast_region_is_refused_naming_its_module() -> None:
    class Inner(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                return self.fc(x)

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = Inner()

        def forward(self, x):
            return self.block(x).float()

    with pytest.raises(ExportError, match=r"autocast region \(to torch.bfloat16\) in module block.*"
                                          r"does not record.*instead of autocast"):
        export(Outer(), [torch.randn(3, 8)])


def test_another_higher_order_op_is_named() -> None:
    class Branch(nn.Module):
        def forward(self, x):
            return torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))

    with pytest.raises(ExportError, match=r"higher-order op cond .* is not supported"):
        export(Branch(), [torch.randn(4)])


def test_names_stay_as_the_signature_gives_them() -> None:
    class Named(nn.Module):
        def forward(self, input):  # torch.fx would rename a node called "input"
            with torch.no_grad():
                sin = input.sin()
            return sin + input.sin()

    g = export(Named(), [torch.randn(3)])
    assert [i["name"] for i in g["inputs"]] == ["input"]
    names = [n["name"] for n in g["nodes"]]
    assert len(names) == len(set(names)) == 3
    assert g["nodes"][2]["args"] == [{"ref": names[0]}, {"ref": names[1]}]
