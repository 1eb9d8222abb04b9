"""Plan summaries of one layer each of Llama, Mistral, Qwen2, GPT-2, BERT, ViT and T5 from
``transformers``, with eager and sdpa attention, called as the models are (the mask built in
forward), exported with FACT's exporter and discovered by ``factc``: per run, the patterns by
rule, the attention problem's mask (and window), the rope patterns, and the rejections of
the attention rule. The layers are tests/python/test_hf_layers.py's (tiny configs, nothing
downloaded; fp32, eval mode), which asserts the same facts; this prints them as a Markdown
table. No GPU is needed.

    python bench/hf_layer_plans.py --factc build/factc [--out summary.md]
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tests" / "python"))

import torch  # noqa: E402

from fact.export import export, write_graph  # noqa: E402
from fact.load_time import constant_cones  # noqa: E402
from test_hf_layers import EXPECTED, T, layer  # noqa: E402  (the layers, defined once)


def plan_of(name: str, impl: str, factc: str, work: pathlib.Path) -> tuple[dict, dict]:
    """The graph of one layer of model `name` with attention `impl`, and the plan factc
    discovers for it."""
    model, x = layer(name, impl)
    graph, plan = work / f"{name}-{impl}.graph.json", work / f"{name}-{impl}.plan.json"
    with torch.no_grad():
        g = export(model, [x])
    write_graph(g, graph)
    subprocess.run([factc, "discover", str(graph), "-o", str(plan)], check=True, capture_output=True)
    return g, json.loads(plan.read_text())


def summary_row(name: str, impl: str, graph: dict, plan: dict) -> list[str]:
    """Model, attention, patterns by rule, the attention's mask, rope patterns (and how many
    of their cos/sin tables the generated module computes at load, fact.load_time), attention
    rejections, and whether the mask is the one test_hf_layers expects."""
    rules = collections.Counter(p["rule"] for p in plan["patterns"])
    attention = [p for p in plan["patterns"] if p["rule"] == "attention"]
    masks = []
    for p in attention:
        pr = p["problem"]
        masks.append(pr["mask"] + (f" window {pr['window']}" if pr.get("window") else "") +
                     f" ({pr.get('form', '?')}, {pr['heads']}/{pr['kv_heads']} heads, T {pr['seq_q']})")
    rope_patterns = [p for p in plan["patterns"] if p["rule"] == "rope"]
    ropes = [f"{p['problem']['form']} {p['problem']['dims']}" for p in rope_patterns]
    if rope_patterns:
        tables = {p["operands"][r] for p in rope_patterns for r in ("cos", "sin")}
        owned = {n for p in plan["patterns"] for n in p["nodes"]}
        ropes.append(f"tables at load {len(constant_cones(graph, sorted(tables), owned))}/{len(tables)}")
    rejected = sorted({r["reason"] for r in plan["rejected"] if r["rule"] == "attention"})
    want = EXPECTED[name]
    got = [(p["problem"]["mask"], p["problem"].get("window")) for p in attention]
    return [name, impl, ", ".join(f"{r} {n}" for r, n in sorted(rules.items())), "; ".join(masks) or "—",
            "; ".join(ropes) or "—", "; ".join(rejected) or "—", "yes" if got == [want] else f"NO (want {want})"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--factc", default=str(ROOT / "build" / "factc"))
    ap.add_argument("--out", help="write the table here too")
    a = ap.parse_args()
    import transformers
    head = ["model", "attention", "patterns", "attention mask", "rope", "attention rejections", "as expected"]
    lines = [f"transformers {transformers.__version__}, torch {torch.__version__}; one layer, fp32, eval, "
             f"T {T} (ViT: 16 patches + class token)", "", "| " + " | ".join(head) + " |",
             "|" + "---|" * len(head)]
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for name in sorted(EXPECTED):
            for impl in ("eager", "sdpa"):
                row = summary_row(name, impl, *plan_of(name, impl, a.factc, pathlib.Path(tmp)))
                ok &= row[-1] == "yes"
                lines.append("| " + " | ".join(row) + " |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if a.out:
        pathlib.Path(a.out).write_text(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
