"""The generated module of each block in examples/blocks/ at its CI size, a golden text test
(tests/golden/module/<block>.py.txt; FACT_UPDATE_GOLDEN=1 rewrites them, and their diff is
the review): the block is exported, discovered by the real engine, and every planned pattern
is bound to a stand-in kernel library whose can_implement refuses every call, so the module
also runs each kernel's ATen fallback and must give the block's eager output."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import torch

from artifacts import write_artifact
from fact.export import export
from fact.runtime import load
from test_block_examples import BLOCKS, _load

# One symbol of every family's entry points; can_implement refuses (code 1).
_STAND_IN = r"""
#include <stddef.h>
int standin_can_implement(const void* args) { return 1; }
size_t standin_workspace_bytes(const void* args) { return 0; }
int standin_run(const void* args, void* ws, size_t ws_bytes, void* stream) { return 1; }
const char* standin_name(void) { return "stand-in"; }
"""


def _manifest_patterns(plan: dict) -> list[dict]:
    """The plan's patterns as manifest entries of stand-in kernels (unfused: the GEMMs'
    tails stay ATen calls), the norm family's sum as its extra output."""
    out = []
    for p in plan["patterns"]:
        entry = {"id": p["id"], "rule": p["rule"], "nodes": p["nodes"], "output": p["output"],
                 "operands": p["operands"], "problem": p["problem"], "impl": "cutlass",
                 "kernel": f"stand-in {p['rule']} kernel", "symbol": "standin",
                 "workspace_bytes": 0, "verified": True}
        if p["problem"].get("sum_output"):
            entry["extra_outputs"] = {"sum": p["problem"]["sum_output"]}
        out.append(entry)
    return out


@pytest.mark.parametrize("name", BLOCKS)
def test_generated_module_of_each_block(name, repo_root, factc, tmp_path, build_c_library) -> None:
    module = _load(repo_root, name)
    torch.manual_seed(0)
    model = module.Model(*module.small_init_inputs())
    inputs = module.small_inputs()
    graph = export(model, inputs)
    (tmp_path / "graph.json").write_text(json.dumps(graph))
    subprocess.run([factc, "discover", str(tmp_path / "graph.json"), "-o", str(tmp_path / "plan.json")],
                   check=True, capture_output=True)
    plan = json.loads((tmp_path / "plan.json").read_text())
    src = tmp_path / "standin.c"
    src.write_text(_STAND_IN)
    lib = build_c_library("gemm/abi.h", str(src), "libstandin.so")
    art = write_artifact(tmp_path, graph, _manifest_patterns(plan), lib)
    manifest = json.loads((tmp_path / "artifact" / "manifest.json").read_text())
    manifest["dropped"] = [{"node": f["node"], "same_as": f["same_as"]}  # as compose writes it
                           for f in plan["fallback"] if "same_as" in f]
    (tmp_path / "artifact" / "manifest.json").write_text(json.dumps(manifest))
    fm = load(art, model)
    text = fm.source()
    golden = os.path.join(repo_root, "tests", "golden", "module", f"{name}.py.txt")
    if os.environ.get("FACT_UPDATE_GOLDEN") == "1":
        os.makedirs(os.path.dirname(golden), exist_ok=True)
        with open(golden, "w", encoding="utf-8") as f:
            f.write(text)
    assert os.path.isfile(golden), f"{golden} is missing (FACT_UPDATE_GOLDEN=1 writes it)"
    with open(golden, encoding="utf-8") as f:
        assert text == f.read(), f"{name}: the generated module differs from {golden}"
    # Every pattern is one kernel call, and none of its nodes' ops is called.
    assert text.count("= self.fact_p") == len(plan["patterns"])
    assert "aten.linear" not in text and "aten.layer_norm" not in text and "aten.rsqrt" not in text
    # The stand-in kernels refuse (CPU tensors): each call runs its pattern's ATen nodes.
    with torch.no_grad():
        torch.testing.assert_close(fm(*inputs), model(*inputs), rtol=1e-5, atol=1e-5)
    counts = fm.fallback_counts()
    assert set(counts) == {p["id"] for p in plan["patterns"]} and set(counts.values()) == {1}
