"""The backend's composition with Inductor on CPU (python/fact/backend.py, the default
``remainder="inductor"``), with the stand-in engine: FACT's module compiled by Inductor and
measured against Inductor alone, the decision kept for a later compile, every refusal
compiled by Inductor, and in-place ops on intermediates accepted."""

from __future__ import annotations

import json
import os
import sys
import warnings

import pytest
import torch

import fact.backend
import fact.composition
import fact.log
from fact.export import export, export_program, in_place_ops
from fact.log import FactWarning
from fact.precision import Check
from mini_models import ConvNet, GraphBreak, MiniGPT, mini_gpt_inputs
from test_backend import _commands, _fresh_dynamo, _plans, engine, metadata  # noqa: F401

CLOSE = {"rtol": 1e-4, "atol": 1e-5}


def _compile(model, inputs, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = torch.compile(model, backend="fact", options=options)(*inputs)
    return got, [str(w.message) for w in caught if issubclass(w.category, FactWarning)]


def test_the_module_is_measured_against_inductor_alone_and_the_choice_is_kept(
        tmp_path, engine, monkeypatch, caplog) -> None:
    import fact.remainder
    compiles = []
    real = fact.remainder.inductor_compile
    monkeypatch.setattr(fact.remainder, "inductor_compile",
                        lambda gm, args: compiles.append(len(gm.graph.nodes)) or real(gm, args))
    torch.manual_seed(0)
    model, inputs = MiniGPT().eval(), mini_gpt_inputs()
    out_dir = tmp_path / "out"
    caplog.set_level("INFO", logger="fact")
    with torch.no_grad():
        got, said = _compile(model, inputs, precision="fp32", out_dir=str(out_dir))
        want = model(*inputs)
    assert said == [] and torch.allclose(got, want, **CLOSE)
    # FACT's module was compiled by Inductor inside the backend (Dynamo would not have).
    assert len(compiles) >= 1 and compiles[0] > 40
    (plan,) = _plans(out_dir)
    work = out_dir / os.path.dirname(plan)
    decision = json.loads((work / "composition.json").read_text())
    assert decision["choice"] in ("fact", "inductor")
    assert decision["fact_ms"] > 0 and decision["inductor_ms"] > 0
    assert decision["rows"] == [] and decision["budget_s"] == 120.0  # all-vendor: no kernels
    (line,) = [r.getMessage() for r in caplog.records if "Inductor alone" in r.getMessage()]
    assert f"FACT+Inductor {decision['fact_ms']:.4g} ms" in line

    # A later compile of the same subgraph reads the decision back: nothing is timed.
    def no_timing(*args, **kwargs):
        raise AssertionError("measured again")

    monkeypatch.setattr(fact.composition, "compose", no_timing)
    torch._dynamo.reset()
    with torch.no_grad():
        again, said = _compile(model, inputs, precision="fp32", out_dir=str(out_dir))
    assert said == [] and torch.allclose(again, want, **CLOSE)
    assert _commands(engine["log"]) == ["discover", "realize", "compose"]  # loaded, once


def test_measure_off_uses_fact_with_inductor_unmeasured(tmp_path, engine) -> None:
    torch.manual_seed(0)
    model, x = GraphBreak().eval(), torch.randn(4, 16)
    out_dir = tmp_path / "out"
    with torch.no_grad():
        got, said = _compile(model, [x], out_dir=str(out_dir), measure=False)
        want = model(x)
    assert said == [] and torch.allclose(got, want, **CLOSE)
    assert len(_plans(out_dir)) == 2
    assert not any(os.path.exists(out_dir / os.path.dirname(p) / "composition.json")
                   for p in _plans(out_dir))


def test_cpu_tensors_are_compiled_by_inductor_with_one_warning(tmp_path, fake_factc,
                                                                monkeypatch) -> None:
    monkeypatch.setattr(fact.log, "_said", set())
    model, x = GraphBreak().eval(), torch.randn(4, 16)
    with torch.no_grad():
        got, said = _compile(model, [x], out_dir=str(tmp_path / "out"))
        want = model(x)
    assert torch.allclose(got, want, **CLOSE)
    assert said == ["fact backend: tensors on cpu: FACT kernels run on CUDA devices; move the "
                    "model and its inputs to CUDA; Inductor compiles the graph"]


def test_a_subgraph_without_a_pattern_is_compiled_by_inductor(tmp_path, engine, monkeypatch,
                                                              caplog) -> None:
    seen = []
    real = fact.backend.inductor_alone
    monkeypatch.setattr(fact.backend, "inductor_alone",
                        lambda gm, ex: seen.append(len(gm.graph.nodes)) or real(gm, ex))
    torch.manual_seed(0)
    model, x = ConvNet().eval(), torch.randn(2, 3, 8, 8)
    caplog.set_level("INFO", logger="fact")
    with torch.no_grad():
        got, said = _compile(model, [x], out_dir=str(tmp_path / "out"))
        want = model(x)
    assert said == [] and torch.allclose(got, want, **CLOSE)
    assert len(seen) == 1 and _commands(engine["log"]) == ["discover"]
    assert any("has no FACT pattern" in r.getMessage() for r in caplog.records)


def test_a_subgraph_that_fails_verification_is_compiled_by_inductor(tmp_path, engine,
                                                                    monkeypatch) -> None:
    monkeypatch.setattr(fact.log, "_said", set())
    bad = Check(False, 1.0, 1.0, 1e-5, "rel err 1 > limit 1e-05")
    monkeypatch.setattr(sys.modules["fact.optimize"], "verify",
                        lambda *a, **k: {"fact": bad, "eager": bad, "draws": []})
    torch.manual_seed(0)
    model, x = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU()).eval(), \
        torch.randn(4, 16)
    with torch.no_grad():
        got, said = _compile(model, [x], out_dir=str(tmp_path / "out"))
        want = model(x)
    assert torch.allclose(got, want, **CLOSE)
    (text,) = said
    assert "failed verification against float64 (rel err 1 > limit 1e-05); Inductor " \
        "compiles the graph" in text


class _Residual(torch.nn.Module):
    """torchvision's BasicBlock habits: ``out += identity`` and an in-place ReLU on
    intermediates."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(16, 16), torch.nn.Linear(16, 16)
        self.relu = torch.nn.ReLU(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.fc1(x))
        out = self.fc2(out)
        out += identity
        return self.relu(out)


def test_in_place_ops_on_intermediates_are_functionalized_at_export() -> None:
    model, x = _Residual().eval(), torch.randn(4, 16)
    raw = torch.export.export(model, (x,))
    assert in_place_ops(raw) == ["aten.add_.Tensor", "aten.relu_.default"]
    assert in_place_ops(export_program(model, [x])) == []
    ops = [n["op"] for n in export(model, [x])["nodes"]]
    assert ops == ["aten.linear.default", "aten.relu.default", "aten.linear.default",
                   "aten.add.Tensor", "aten.relu.default"]


def test_in_place_ops_on_intermediates_compile_through_the_backend(tmp_path, engine) -> None:
    torch.manual_seed(0)
    model, x = _Residual().eval(), torch.randn(4, 16)
    with torch.no_grad():
        got, said = _compile(model, [x], out_dir=str(tmp_path / "out"), remainder="aten")
        want = model(x)
    assert said == [] and torch.equal(got, want)
    assert _commands(engine["log"]) == ["discover", "realize", "compose"]
    assert torch.equal(x, x.clone())  # (the input itself is never written)


class _WritesItsInput(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.mul_(2.0)  # a write to the caller's tensor: refused, not functionalized away
        return self.fc(x)


def test_a_graph_that_writes_its_input_is_refused_and_writes_it_once(tmp_path, engine,
                                                                      monkeypatch) -> None:
    monkeypatch.setattr(fact.log, "_said", set())
    torch.manual_seed(0)
    model, x = _WritesItsInput().eval(), torch.randn(4, 8)
    before = x.clone()
    with torch.no_grad():
        got, said = _compile(model, [x], out_dir=str(tmp_path / "out"))
    (text,) = said
    assert "writes to its inputs or buffers (user_input_mutation of user_0)" in text
    assert text.endswith("Inductor compiles the graph")
    assert torch.equal(x, before * 2)  # written once, as eager writes it
    assert torch.allclose(got, model.fc(before * 2), **CLOSE)
    assert _commands(engine["log"]) == []


def test_the_options_are_checked_before_anything_runs() -> None:
    parse = fact.backend.BackendOptions.parse
    assert parse({"ablation_budget_s": None}).ablation_budget_s is None
    for bad, match in (({"measure": "false"}, "measure 'false': expected True or False"),
                       ({"ablation_budget_s": "10"}, "ablation_budget_s '10': expected seconds"),
                       ({"ablation_budget_s": -1}, "ablation_budget_s -1: expected seconds"),
                       ({"ablation_budget_s": float("nan")}, "ablation_budget_s nan"),
                       ({"remainder": "Inductor"}, "remainder 'Inductor': expected one of")):
        with pytest.raises(ValueError, match=match):
            parse(bad)


def test_an_inductor_failure_on_a_refused_subgraph_runs_dynamos_graph(
        tmp_path, fake_factc, monkeypatch) -> None:
    import torch._inductor.compile_fx as cfx
    monkeypatch.setattr(fact.log, "_said", set())

    def broken(*args, **kwargs):
        raise RuntimeError("no C++ compiler")

    monkeypatch.setattr(cfx, "compile_fx", broken)
    model, x = GraphBreak().eval(), torch.randn(4, 16)
    with torch.no_grad():
        got, said = _compile(model, [x], out_dir=str(tmp_path / "out"))
        want = model(x)
    assert torch.equal(got, want)
    assert "fact backend: Inductor failed on a subgraph (RuntimeError: no C++ compiler); it " \
        "runs as Dynamo gave it" in said
