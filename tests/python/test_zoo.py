"""bench/zoo.py: the table rendered from a results file (speedups and their geomean derived
from the times), ``--render``, and the model builders of bench/zoo_models.py at tiny sizes."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))  # zoo.py imports zoo_models from its folder
_spec = importlib.util.spec_from_file_location("zoo", ROOT / "bench" / "zoo.py")
zoo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(zoo)
zoo_models = sys.modules["zoo_models"]


def _row(problem: str, policy: str, eager: float, inductor: float, fact: float,
         verified: bool = True) -> dict:
    return {"problem": problem, "policy": policy, "model_dtype": "bfloat16",
            "fact_ms": fact, "fact_spread_ms": [fact, fact],
            "baselines_ms": {"eager": eager, "inductor": inductor},
            "max_rel_err": 1e-3, "inductor_max_rel_err": 2e-3, "verified": verified,
            "verify_rule": zoo.RULE_TOLERANCE if verified else None,
            "compile_tune_s": 95.0, "baseline_compile_s": {"inductor": 40.0},
            "kernels": ["k0"], "composition": [{"key": "0123456789abcdef", "choice": "fact",
                                                "kernels": ["k0"], "fell_back": False}],
            "subgraphs": 1, "fact_warnings": []}


DOC = {"command": "python bench/zoo.py --models gpt2 bert", "date": "2026-12-01T00:00:00Z",
       "machine": {"gpu": "NVIDIA H100 80GB HBM3", "driver": "580", "torch": "2.11.0",
                   "cuda": "13.0", "cutlass": "4.2.0", "fact_commit": "abc1234"},
       "rows": [_row("gpt2", "bf16", eager=10.0, inductor=6.0, fact=4.0),
                _row("bert", "bf16", eager=8.0, inductor=3.0, fact=4.0)]}


def _table(md: str) -> dict[str, dict[str, str]]:
    """model -> {column: cell} of the rendered markdown table."""
    lines = [line for line in md.splitlines() if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in lines[1:]]
    return {r[0]: dict(zip(header, r)) for r in rows}


def test_speedups_and_their_geomean_are_derived_from_the_times() -> None:
    md = zoo.render_markdown(DOC, source="zoo-h100.json")
    table = _table(md)
    assert table["gpt2"]["speedup vs torch.compile"] == "1.50x"  # 6 / 4
    assert table["gpt2"]["speedup vs eager"] == "2.50x"  # 10 / 4
    assert table["bert"]["speedup vs torch.compile"] == "0.75x"  # 3 / 4
    assert table["bert"]["speedup vs eager"] == "2.00x"
    assert table["gpt2"]["compile s (tc / FACT)"] == "40 / 95"
    assert table["gpt2"]["max rel err (FACT / tc)"] == "1.0e-03 / 2.0e-03"
    assert table["gpt2"]["verified"] == f"yes ({zoo.RULE_TOLERANCE})"
    assert table["gpt2"]["max-autotune ms"] == "—"
    # sqrt(1.5 * 0.75) = 1.0607
    assert "Geomean speedup of FACT vs torch.compile (default mode): 1.06x over 2 verified rows." in md


def test_an_unverified_row_claims_no_speedup_and_stays_out_of_the_geomean() -> None:
    doc = dict(DOC, rows=[DOC["rows"][0], _row("t5", "tf32", 9.0, 4.0, 2.0, verified=False),
                          {"problem": "vit", "policy": "bf16", "error": "ImportError: torchvision"}])
    table = _table(zoo.render_markdown(doc))
    assert table["t5"]["speedup vs torch.compile"] == "—"
    assert table["t5"]["verified"] == "no"
    assert table["vit"]["verified"] == "build failed: ImportError: torchvision"
    assert zoo.geomean_vs_inductor(doc["rows"]) == (pytest.approx(1.5), 1)


def test_render_rewrites_the_markdown_beside_the_json(tmp_path, capsys) -> None:
    path = tmp_path / "zoo-h100.json"
    path.write_text(json.dumps(DOC))
    assert zoo.main(["--render", str(path)]) == 0
    md = (tmp_path / "zoo-h100.md").read_text()
    assert md == zoo.render_markdown(DOC, source="zoo-h100.json")
    assert "geomean FACT vs torch.compile: 1.06x (2 rows)" in capsys.readouterr().out


def test_help_needs_no_gpu(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        zoo.main(["--help"])
    assert exit_.value.code == 0
    assert "--max-autotune-limit" in capsys.readouterr().out


@pytest.mark.parametrize("name, width", [("gpt2", 768), ("bert", 768)])
def test_builder_returns_the_last_hidden_state(name: str, width: int) -> None:
    pytest.importorskip("transformers")
    model, inputs, family = zoo_models.build(name, batch=2, seq=16, layers=1)
    assert family == zoo_models.MODELS[name].family
    assert list(inputs) == ["input_ids"] and inputs["input_ids"].shape == (2, 16)
    with torch.inference_mode():
        out = model(*inputs.values())
    assert isinstance(out, torch.Tensor) and out.shape == (2, 16, width)
    assert not model.training


def test_vision_builder_returns_logits() -> None:
    pytest.importorskip("torchvision")
    model, inputs, _ = zoo_models.build("vit", batch=2, layers=1)
    with torch.inference_mode():
        out = model(*inputs.values())
    assert out.shape == (2, 1000)


def test_subgraphs_are_read_back_from_their_folders(tmp_path) -> None:
    """The composition's choice, its kept and dropped groups, and the kernels that run: not
    handed back by the composition nor by the ATen check; a subgraph a warning names fell
    back and runs none."""
    measured, unmeasured, failed = "0123456789abcdef", "fedcba9876543210", "00000000000000ff"
    patterns = [{"id": "p0", "impl": "cutlass", "kernel": "k_gemm"},
                {"id": "p1", "impl": "cutlass", "kernel": "k_attn"},
                {"id": "p2", "impl": "cutlass", "kernel": "k_norm"},
                {"id": "p3", "impl": "vendor", "kernel": "cublas"}]
    for key in (measured, unmeasured, failed):
        (tmp_path / key / "artifact").mkdir(parents=True)
        (tmp_path / key / "artifact" / "manifest.json").write_text(json.dumps({"patterns": patterns}))
    rows = [{"group": "k_gemm", "patterns": ["p0"], "with_ms": 1.0, "without_ms": 1.2,
             "kept": True, "why": "faster with it"},
            {"group": "k_norm", "patterns": ["p2"], "with_ms": 1.0, "without_ms": 0.9,
             "kept": False, "why": "faster handed back to Inductor"}]
    (tmp_path / measured / "composition.json").write_text(json.dumps(
        {"choice": "fact", "fact_ms": 1.1, "inductor_ms": 1.3, "final_fact_ms": 0.9,
         "final_inductor_ms": 1.3, "dropped": ["p2"], "rows": rows, "seconds": 30.0,
         "budget_s": 120.0}))
    (tmp_path / measured / "realized.json").write_text(json.dumps({"cutlass": "4.2.0"}))
    log = [f"fact backend: subgraph {measured}: 40 nodes, compiling into {tmp_path / measured}",
           f"fact backend: subgraph {measured}: p1 runs its ATen nodes (2 ms against the kernel's 3)",
           f"fact backend: subgraph {unmeasured}: loading {tmp_path / unmeasured} (compiled before)",
           f"fact backend: subgraph {failed}: 12 nodes, compiling into {tmp_path / failed}"]
    warned = [f"fact backend: subgraph {failed} failed verification against float64 (x); "
              f"Inductor compiles the graph"]
    summaries, realized = zoo.fact_subgraphs(str(tmp_path), log, warned)
    assert realized == {"cutlass": "4.2.0"}
    first, second, third = summaries
    assert [s["key"] for s in summaries] == [measured, unmeasured, failed]
    assert first["choice"] == "fact" and first["kernels"] == ["k_gemm"]
    assert first["kept_groups"] == ["k_gemm"] and first["dropped_groups"] == ["k_norm"]
    assert first["dropped"] == ["p2"] and first["final_fact_ms"] == 0.9
    assert second["choice"] == "fact" and second["kernels"] == ["k_gemm", "k_attn", "k_norm"]
    assert third["choice"] == "none" and third["fell_back"] and third["kernels"] == []
