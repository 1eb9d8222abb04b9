"""The runtime on CPU, whatever the kernel family: vendor artifacts reproduce eager exactly,
parameters come from the model or params.pt, ATen ops resolve, a missing manifest is named.
Each family's kernel path is tested beside its mirror, tests/python/families/."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from artifacts import write_artifact
from fact.export import export, export_program
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
    art = write_artifact(tmp_path, graph, [
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
    art = write_artifact(tmp_path, graph_from_program(ep), [])
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


@pytest.mark.parametrize("text, message", [
    ('{"format": "fact.manifest", "version": 1, "patterns": [], "patterns": [1]}', 'duplicate key "patterns"'),
    ('[1, 2]', "expected a JSON object"),
    ('{"format": "fact.manifest", "version": 1,', "not valid JSON"),
])
def test_a_bad_manifest_is_named(tmp_path, text, message) -> None:
    # A key twice was once resolved silently to its last value (json.load's default).
    (tmp_path / "manifest.json").write_text(text)
    with pytest.raises(ArtifactError, match=message) as info:
        load(tmp_path)
    assert "manifest.json" in str(info.value)
