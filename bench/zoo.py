"""Whole models, built from their libraries' configs with random weights (nothing
downloaded), timed under eager PyTorch, torch.compile and FACT's Dynamo backend.

Reproduce (on a GPU machine with the engine built, from the repository root)::

    PYTHONPATH=python python bench/zoo.py --policy bf16 --policy tf32 --results $OUT/zoo-h100.json

Models (bench/zoo_models.py; ``--models`` picks): gpt2, llama, qwen2, bert, t5
(``transformers``: sdpa attention, no cache, the last hidden state), vit, resnet50, convnext
(``torchvision``: the logits). Each is in eval mode on CUDA and every call runs under
``torch.inference_mode()``.

Policies (``--policy``, repeatable; default bf16): ``bf16``: the model and its floating
inputs converted to bfloat16, so every variant runs the bf16 model (eager is its own bf16
forward, no autocast); ``tf32``: the fp32 model with ``torch.set_float32_matmul_precision
("high")`` for every variant. FACT gets the policy as its ``precision`` option.

Per (model, policy), in one process: the model is built; its eager output and its float64
reference (an fp64 copy of the model's own weights: the bf16 weights under bf16) are
computed (a reference that cannot tell right from wrong, as torchvision's ViT with its
zero-initialized head gives, has the model's constant parameters drawn once first,
:func:`fact.weight_draws.draw_parameters`; the row's ``drawn_parameters`` names them); then ``torch.compile`` (default mode), with ``--max-autotune`` also
``mode="max-autotune-no-cudagraphs"``, and ``torch.compile(backend="fact", options=...)``
are each compiled by their first call after ``torch._dynamo.reset()`` (that call's wall
time is the variant's compile seconds) and their output is checked against the reference.
All variants are then timed alternating on the same inputs (:func:`fact.bench.time_variants`:
a write larger than L2 before each trial, CUDA events, the median of ``--trials``). A reset
drops the earlier variants' Dynamo caches, so each is called once more before the timing
(Inductor recompiles it from its caches), outside the timed trials.

A row is verified when FACT's output passes :func:`fact.precision.check_output` under the
policy, or when its max relative error (``max|out - ref| / max|ref|``) is at most twice
torch.compile's (``verify_rule`` says which). FACT's subgraphs are read back from
``<out-dir>/<key>/``: each one's composition and the kernels that run (:func:`fact_subgraphs`).

Results: docs/07-bench-format.md's JSON (``--results``, default ``$OUT/zoo-<gpu>.json``),
rewritten after each row, and its table beside it (``.md``); ``--render FILE.json`` only
re-renders the table of an existing file.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import math
import os
import re
import shlex
import sys
import time
import warnings
from typing import Any, Callable, Iterator

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

from fact.report import _err, _ms, bench_document, machine_info, speedup, write_bench  # noqa: E402
from zoo_models import MODELS, build  # noqa: E402  (bench/, the script's folder)

#: torch.compile variants other than FACT: baseline name -> torch.compile's keywords.
COMPILE_MODES: dict[str, dict[str, Any]] = {
    "inductor": {},
    "inductor_max_autotune": {"mode": "max-autotune-no-cudagraphs"},
}
#: A row's leading keys, in docs/07-bench-format.md's order; the others follow.
ROW_ORDER = ["problem", "policy", "model_dtype", "fact_ms", "fact_spread_ms", "baselines_ms",
             "max_rel_err", "inductor_max_rel_err", "verified", "verify_rule",
             "compile_tune_s", "baseline_compile_s", "kernels"]
RULE_TOLERANCE = "policy tolerance"
RULE_INDUCTOR = "within 2x torch.compile"
_SUBGRAPH = re.compile(r"subgraph ([0-9a-f]{16})\b")
_ATEN_CHECKED = re.compile(r"subgraph ([0-9a-f]{16}): (\S+) runs its ATen nodes")


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:300] if lines else ''}".rstrip(": ")


def _json_or_none(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def gpu_tag() -> str:
    """``h100`` / ``h200`` from the GPU's name, another GPU's name in short, else ``cpu``."""
    if not torch.cuda.is_available():
        return "cpu"
    name = torch.cuda.get_device_name()
    for tag in ("h100", "h200"):
        if tag in name.lower():
            return tag
    return re.sub(r"\W+", "-", name.lower().removeprefix("nvidia ")).strip("-")


# ------------------------------------------------------------------ FACT's subgraphs

@contextlib.contextmanager
def fact_log() -> Iterator[list[str]]:
    """The ``fact`` logger's messages (DEBUG and up) while the block runs, collected in the
    list yielded; those at INFO and up are also printed (the run's log is its stdout)."""
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage()
            messages.append(text)
            if record.levelno >= logging.INFO:
                print(f"  [fact] {text}", flush=True)

    logger = logging.getLogger("fact")
    handler, level = Collect(logging.DEBUG), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield messages
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def subgraph_summary(work: str, key: str, warning_texts: list[str],
                     aten_checked: set[str]) -> dict:
    """One subgraph's entry of the row's ``composition``, read from its folder ``work``.

    ``choice``: the measured composition's (``fact``: FACT+Inductor, ``inductor``: Inductor
    alone); ``fact`` when the module ran unmeasured; ``none`` when no FACT module runs it
    (no pattern matched, or it fell back: a warning names it, ``fell_back``). ``kernels``:
    the manifest's kernel patterns (impl cutlass) that run: not handed back by the
    composition nor by the ATen check (``aten_checked``: pattern ids)."""
    from fact.composition import Composition
    from fact.runtime import kernel_patterns
    manifest = _json_or_none(os.path.join(work, "artifact", "manifest.json"))
    doc = _json_or_none(os.path.join(work, "composition.json"))
    fell_back = [w for w in warning_texts if key in w]
    entries = kernel_patterns(manifest)
    ids = [str(p["id"]) for p in entries]
    out: dict[str, Any] = {"key": key, "fell_back": bool(fell_back)}
    composition = None
    if doc is not None:
        try:
            composition = Composition.from_json(doc)
        except ValueError:
            composition = None
    if fell_back or manifest is None:
        out["choice"], handed = "none", set(ids)
    elif composition is not None:
        out["choice"], handed = composition.choice, set(composition.handed_back(ids))
    else:
        out["choice"], handed = "fact", set()
    handed |= aten_checked
    if composition is not None:
        out.update({k: getattr(composition, k) for k in
                    ("fact_ms", "inductor_ms", "final_fact_ms", "final_inductor_ms",
                     "dropped", "seconds")})
        out["kept_groups"] = [r.group for r in composition.rows if r.kept]
        out["dropped_groups"] = [r.group for r in composition.rows if not r.kept]
    out["patterns"] = len((manifest or {}).get("patterns", []))
    out["kernels"] = [str(p.get("kernel") or p["id"]) for p in entries
                      if str(p["id"]) not in handed]
    return out


def fact_subgraphs(out_dir: str, log: list[str], warning_texts: list[str]
                   ) -> tuple[list[dict], dict | None]:
    """Per subgraph the backend named in its log (in order), :func:`subgraph_summary`; and
    the first ``realized.json`` among their folders (its CUTLASS version, for ``machine``)."""
    keys = list(dict.fromkeys(m.group(1) for line in log for m in [_SUBGRAPH.search(line)]
                              if m))
    checked = {key: {m.group(2) for line in log for m in [_ATEN_CHECKED.search(line)]
                     if m and m.group(1) == key} for key in keys}
    summaries = [subgraph_summary(os.path.join(out_dir, k), k, warning_texts, checked[k])
                 for k in keys]
    realized = next((r for k in keys for r in [_json_or_none(os.path.join(out_dir, k,
                                                                          "realized.json"))]
                     if r), None)
    return summaries, realized


def record_fact(row: dict, warning_texts: list[str], log: list[str], out_dir: str
                ) -> dict | None:
    """The row's FACT fields after its compile: ``fact_warnings``, ``subgraphs`` and
    ``graph_breaks`` (Dynamo's counters), ``composition`` (:func:`fact_subgraphs`),
    ``kernels`` (those that run, each once) and ``fact_fell_back`` (a subgraph left to
    Inductor or run as Dynamo gave it). Returns a subgraph's ``realized.json``."""
    stats = torch._dynamo.utils.counters
    row["fact_warnings"] = warning_texts
    row["subgraphs"] = int(stats["stats"]["unique_graphs"])
    row["graph_breaks"] = int(sum(stats["graph_break"].values()))
    row["composition"], realized = fact_subgraphs(out_dir, log, warning_texts)
    row["kernels"] = list(dict.fromkeys(k for s in row["composition"] for k in s["kernels"]))
    row["fact_fell_back"] = any(s["fell_back"] for s in row["composition"]) \
        or any(w.startswith("fact backend:") for w in warning_texts)
    return realized


# ------------------------------------------------------------------ one row

def _ensure_fact_backend() -> None:
    """``backend="fact"`` found by Dynamo: through the package's entry point when it is
    installed, else registered here (the package on PYTHONPATH only)."""
    if "fact" not in torch._dynamo.list_backends(exclude_tags=()):
        from fact.backend import fact_backend
        torch._dynamo.register_backend(fact_backend, name="fact")


def _first_call(fn: Callable[..., Any], inputs: list, ctx: Callable[[], Any]
                ) -> tuple[Any, float]:
    """``fn(*inputs)`` under ``ctx()``, and its wall seconds (the GPU synchronized)."""
    start = time.perf_counter()
    with ctx():
        out = fn(*inputs)
    torch.cuda.synchronize()
    return out, time.perf_counter() - start


def _reference_device(model: torch.nn.Module) -> str:
    """``cuda`` when twice an fp64 copy of the weights fits in free GPU memory with 8 GiB to
    spare (the activations), else ``cpu``."""
    fp64 = 8 * sum(p.numel() for p in model.parameters())
    free, _ = torch.cuda.mem_get_info()
    return "cuda" if free > 2 * fp64 + 8 * 2**30 else "cpu"


def float64_output(model: torch.nn.Module, inputs: list, device: str) -> Any:
    """The model's output in float64 (:func:`fact.bench.float64_reference`, tied weights
    included) on ``device``."""
    from fact.bench import float64_reference
    return float64_reference(model, inputs, device)


def _verify(row: dict, checks: dict, policy: str) -> None:
    """``verified`` and ``verify_rule`` of the row from the variants' checks."""
    fact, tc = checks.get("fact"), checks.get("inductor")
    row["verified"], row["verify_rule"] = False, None
    if fact is None:
        return
    if fact.ok:
        row["verified"], row["verify_rule"] = True, RULE_TOLERANCE
    elif tc is not None and math.isfinite(fact.max_rel_err) \
            and math.isfinite(tc.max_rel_err) and fact.max_rel_err <= 2 * tc.max_rel_err:
        row["verified"], row["verify_rule"] = True, RULE_INDUCTOR
    else:
        row["verify_reason"] = fact.reason


def fact_options(args: argparse.Namespace, policy: str) -> dict:
    """The FACT backend's ``options`` for a row (fact.backend.BackendOptions)."""
    opts = {"precision": policy, "tune_budget": args.tune_budget,
            "ablation_budget_s": args.ablation_budget, "remainder": args.remainder,
            "out_dir": args.out_dir}
    if args.jobs:
        opts["jobs"] = args.jobs
    return opts


def run_row(name: str, policy: str, args: argparse.Namespace) -> tuple[dict, dict | None]:
    """Build, compile, verify and time model ``name`` under ``policy`` (the module
    docstring). Returns the row and the ``realized.json`` of one of FACT's subgraphs."""
    from fact.bench import time_variants
    from fact.log import FactWarning
    from fact.optimize import _round
    from fact.module_verify import uninformative_reason
    from fact.precision import check_output, eager_precision, fact_precision, model_dtype
    from fact.weight_draws import constant_parameters, draw_parameters
    import fact.log

    row: dict[str, Any] = {"problem": name, "policy": policy}
    print(f"== {name} {policy}", flush=True)
    try:
        model, named, family = build(name, args.batch, args.seq, args.layers, device="cuda")
        if policy == "bf16":
            model = model.to(torch.bfloat16)
            named = {k: v.to(torch.bfloat16) if v.is_floating_point() else v
                     for k, v in named.items()}
    except Exception as exc:  # a model that cannot be built is a row saying why
        row["error"] = _first_line(exc)
        print(f"  build failed: {row['error']}", flush=True)
        return row, None
    inputs = list(named.values())
    own = model_dtype(model, inputs)
    row.update({"family": family, "model_dtype": str(own).removeprefix("torch."),
                "batch": int(inputs[0].shape[0]),
                "shape": {k: list(v.shape) for k, v in named.items()},
                "params": sum(p.numel() for p in model.parameters())})
    failed: dict[str, str] = {}
    checks: dict[str, Any] = {}
    compile_s: dict[str, float] = {}
    variants: dict[str, Callable[[], Any]] = {}
    contexts: dict[str, Callable[[], Any]] = {}
    realized = None

    def eager_ctx() -> Any:
        return eager_precision(policy, "cuda", own)

    def fact_ctx() -> Any:
        return fact_precision(policy)

    ref = None
    with torch.inference_mode():
        try:
            eager_out, _ = _first_call(model, inputs, eager_ctx)
            variants["eager"], contexts["eager"] = (lambda: model(*inputs)), eager_ctx
        except Exception as exc:  # Dynamo/Inductor/HF errors have no common base class
            eager_out, failed["eager"] = None, _first_line(exc)
        try:
            row["reference_device"] = _reference_device(model)
            ref = float64_output(model, inputs, row["reference_device"])
            if uninformative_reason(ref):
                # E.g. torchvision's ViT zero-initializes its head: every output is its
                # bias. Its constant parameters are drawn once, for every variant alike.
                drawn = constant_parameters(model)
                draw_parameters(drawn)
                row["drawn_parameters"] = sorted(drawn)
                eager_out, _ = _first_call(model, inputs, eager_ctx)
                ref = float64_output(model, inputs, row["reference_device"])
        except Exception as exc:
            failed["reference"] = _first_line(exc)
        if ref is not None and eager_out is not None:
            checks["eager"] = check_output(eager_out, ref, policy)
        del eager_out

        compiles = [(v, kw, eager_ctx) for v, kw in COMPILE_MODES.items()
                    if v == "inductor" or args.max_autotune]
        compiles.append(("fact", {"backend": "fact", "options": fact_options(args, policy)},
                         fact_ctx))
        for variant, kw, ctx in compiles:
            print(f"  compiling {variant} ...", flush=True)
            torch._dynamo.reset()
            torch._dynamo.utils.counters.clear()
            with warnings.catch_warnings(record=True) as caught, fact_log() as log:
                warnings.simplefilter("always", FactWarning)
                fact.log._said.clear()  # each row says its own FACT warnings
                try:
                    compiled = torch.compile(model, **kw)
                    out, seconds = _first_call(compiled, inputs, ctx)
                except Exception as exc:
                    out, failed[variant] = None, _first_line(exc)
                    print(f"  {variant} failed: {failed[variant]}", flush=True)
            if variant == "fact":
                realized = record_fact(row, [str(w.message) for w in caught
                                             if issubclass(w.category, FactWarning)],
                                       log, args.out_dir)
            if variant in failed:
                continue
            compile_s[variant] = round(seconds, 1)
            if ref is not None:
                checks[variant] = check_output(out, ref, policy)
            del out
            if variant == "inductor_max_autotune" and seconds > args.max_autotune_limit:
                failed[variant] = (f"first call {seconds:.0f} s exceeds --max-autotune-limit "
                                   f"{args.max_autotune_limit:g} s: not timed")
                continue
            variants[variant] = lambda c=compiled: c(*inputs)
            contexts[variant] = ctx
            print(f"  {variant}: first call {seconds:.1f} s", flush=True)
        del ref
        row["compile_tune_s"] = compile_s.pop("fact", None)
        row["baseline_compile_s"] = compile_s
        row["fact_options"] = fact_options(args, policy)

        for variant in list(variants):  # a reset variant recompiles here, not in the timing
            try:
                with contexts[variant]():
                    variants[variant]()
            except Exception as exc:
                failed[variant] = f"after the reset: {_first_line(exc)}"
                del variants[variant]
        timings = {}
        if variants:
            try:
                timings = time_variants(variants, trials=args.trials, contexts=contexts)
            except Exception as exc:
                failed["timing"] = _first_line(exc)
    fact_t = timings.get("fact")
    row["fact_ms"] = _round(fact_t.median_ms) if fact_t else None
    row["fact_spread_ms"] = [_round(x) for x in fact_t.spread()] if fact_t else None
    row["baselines_ms"] = {k: _round(t.median_ms) for k, t in timings.items() if k != "fact"}
    row["baselines_spread_ms"] = {k: [_round(x) for x in t.spread()]
                                  for k, t in timings.items() if k != "fact"}
    fact_c, tc_c, eager_c = (checks.get(v) for v in ("fact", "inductor", "eager"))
    row["max_rel_err"] = fact_c.max_rel_err if fact_c else None
    row["rel_fro_err"] = fact_c.rel_fro_err if fact_c else None
    row["inductor_max_rel_err"] = tc_c.max_rel_err if tc_c else None
    row["eager_max_rel_err"] = eager_c.max_rel_err if eager_c else None
    _verify(row, checks, policy)
    if failed:
        row["failed"] = failed
    first = [k for k in ROW_ORDER if k in row]
    return {**{k: row[k] for k in first}, **row}, realized


# ------------------------------------------------------------------ the table

HEADER = ["model", "policy", "eager ms", "torch.compile ms", "max-autotune ms", "FACT ms",
          "speedup vs torch.compile", "speedup vs eager", "compile s (tc / FACT)",
          "max rel err (FACT / tc)", "verified"]


def _x(s: float | None) -> str:
    return f"{s:.2f}x" if s is not None else "—"


def _seconds(x: Any) -> str:
    return f"{x:.0f}" if isinstance(x, (int, float)) else "—"


def cells(row: dict) -> list[str]:
    """A row's table cells (:data:`HEADER`); speedups only for verified rows."""
    if "error" in row:
        return [row.get("problem", "?"), row.get("policy", "?")] + ["—"] * 8 \
            + [f"build failed: {row['error']}"]
    base = row.get("baselines_ms", {})
    verified = f"yes ({row['verify_rule']})" if row.get("verified") else "no"
    return [row.get("problem", "?"), row.get("policy", "?"), _ms(base.get("eager")),
            _ms(base.get("inductor")), _ms(base.get("inductor_max_autotune")),
            _ms(row.get("fact_ms")), _x(speedup(row, "inductor")), _x(speedup(row, "eager")),
            f"{_seconds(row.get('baseline_compile_s', {}).get('inductor'))} / "
            f"{_seconds(row.get('compile_tune_s'))}",
            f"{_err(row.get('max_rel_err'))} / {_err(row.get('inductor_max_rel_err'))}",
            verified]


def geomean_vs_inductor(rows: list[dict]) -> tuple[float | None, int]:
    """The geometric mean of FACT's speedup over torch.compile (default mode) across the
    verified rows that have one, and how many rows that is."""
    s = [x for x in (speedup(r, "inductor") for r in rows) if x]
    return (math.exp(sum(map(math.log, s)) / len(s)) if s else None), len(s)


def render_markdown(doc: dict, source: str | None = None) -> str:
    """The markdown table of a zoo results document, the geomean line and the notes."""
    m, rows = doc.get("machine", {}), doc.get("rows", [])
    lines = [f"<!-- rendered from {source or 'the JSON file beside this one'} -->",
             f"Command: `{doc.get('command', '')}`  ",
             f"Date: {doc.get('date', '')}, GPU {m.get('gpu') or '?'}, driver "
             f"{m.get('driver') or '?'}, torch {m.get('torch') or '?'}, CUDA "
             f"{m.get('cuda') or '?'}, CUTLASS {m.get('cutlass') or '?'}, FACT commit "
             f"{m.get('fact_commit') or '?'}", "",
             "| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in cells(r)) + " |" for r in rows]
    g, n = geomean_vs_inductor(rows)
    lines += ["", f"Geomean speedup of FACT vs torch.compile (default mode): {_x(g)} over "
              f"{n} verified row{'' if n == 1 else 's'}.", "",
              "torch.compile: default mode, and `mode=\"max-autotune-no-cudagraphs\"` where "
              "timed, under the row's policy, timed alternating with eager and FACT on the "
              "same inputs. Speedup = baseline ms / FACT ms. Compile s: the first call's wall "
              "time. Max rel err: max|out - ref| / max|ref| against float64. Verified: within "
              "the policy's tolerance, or FACT's max rel err at most 2x torch.compile's."]
    notes = []
    for r in rows:
        label = f"{r.get('problem', '?')} {r.get('policy', '?')}"
        if r.get("failed"):
            notes.append(f"{label}: failed " + "; ".join(f"{k}: {v}"
                                                         for k, v in r["failed"].items()))
        comp = r.get("composition") or []
        if comp:
            choices = ", ".join(f"{s['choice']} ({len(s.get('kernels', []))} kernels"
                                + (", fell back" if s.get("fell_back") else "") + ")"
                                for s in comp)
            notes.append(f"{label}: {r.get('subgraphs', len(comp))} subgraph(s): {choices}")
        if r.get("fact_warnings"):
            notes.append(f"{label}: {len(r['fact_warnings'])} FACT warning(s): "
                         + "; ".join(w.splitlines()[0] for w in r["fact_warnings"]))
    if notes:
        lines += [""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def render_text(rows: list[dict]) -> str:
    """The table's columns as plain text, and the geomean line (for stdout)."""
    table = [HEADER] + [cells(r) for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(HEADER))]
    g, n = geomean_vs_inductor(rows)
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                     for r in table) + f"\ngeomean FACT vs torch.compile: {_x(g)} ({n} rows)\n"


def write_results(path: str, doc: dict) -> None:
    """The JSON document at ``path`` and its table beside it (``.md``)."""
    write_bench(path, doc, markdown=False)
    with open(os.path.splitext(path)[0] + ".md", "w", encoding="utf-8") as f:
        f.write(render_markdown(doc, source=os.path.basename(path)))


# ------------------------------------------------------------------ command line

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    out = os.environ.get("OUT")
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS),
                        metavar="MODEL", help=f"models to run (default all: {', '.join(MODELS)})")
    parser.add_argument("--policy", action="append", choices=("bf16", "tf32"), default=None,
                        help="precision policy; repeat for several (default bf16)")
    parser.add_argument("--trials", type=int, default=20, help="timed calls per variant")
    parser.add_argument("--max-autotune", action="store_true",
                        help="also time torch.compile(mode='max-autotune-no-cudagraphs')")
    parser.add_argument("--max-autotune-limit", type=float, default=600.0,
                        help="seconds; a max-autotune first call longer than this is not timed")
    parser.add_argument("--tune-budget", type=int, default=2,
                        help="FACT: CUTLASS candidates built per pattern (0: all)")
    parser.add_argument("--ablation-budget", type=float, default=120.0,
                        help="FACT: seconds the composition's ablation may take per subgraph")
    parser.add_argument("--remainder", choices=("inductor", "aten"), default="inductor",
                        help="FACT: what runs the nodes outside its kernels")
    parser.add_argument("--jobs", type=int, default=None, help="FACT: parallel nvcc processes")
    parser.add_argument("--out-dir", default=os.path.join(out, "zoo-work") if out
                        else os.path.join(REPO, "out", "zoo"),
                        help="FACT: the subgraphs' folders (default $OUT/zoo-work, else out/zoo)")
    parser.add_argument("--batch", type=int, default=None, help="override every model's batch")
    parser.add_argument("--seq", type=int, default=None,
                        help="override every model's tokens (image side for vision models)")
    parser.add_argument("--layers", type=int, default=None,
                        help="override every transformer's layer count")
    parser.add_argument("--results", default=None,
                        help="result JSON (default $OUT/zoo-<gpu>.json, else out/zoo-<gpu>.json)")
    parser.add_argument("--render", default=None, metavar="FILE.json",
                        help="only re-render FILE.json's table (FILE.md) and print it")
    args = parser.parse_args(argv)
    args.policy = args.policy or ["bf16"]
    args.results = args.results or os.path.join(out or os.path.join(REPO, "out"),
                                                 f"zoo-{gpu_tag()}.json")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the rows (or ``--render``); 0 when every row was timed and verified, else 1."""
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    if args.render:
        with open(args.render, encoding="utf-8") as f:
            doc = json.load(f)
        write_results(args.render, doc)
        print(render_text(doc.get("rows", [])), end="", flush=True)
        print(f"wrote {os.path.splitext(args.render)[0]}.md", flush=True)
        return 0
    if not torch.cuda.is_available():
        print("bench/zoo.py: the models run on CUDA and no GPU is visible (--render needs "
              "none)", file=sys.stderr)
        return 2
    _ensure_fact_backend()
    command = shlex.join(["python", "bench/zoo.py", *argv])
    doc = bench_document(command, [], machine_info())
    realized = None
    for name in args.models:
        for policy in args.policy:
            row, found = run_row(name, policy, args)
            torch._dynamo.reset()  # the row's compiled variants and their memory go
            gc.collect()
            torch.cuda.empty_cache()
            doc["rows"].append(row)
            realized = realized or found
            doc["machine"] = machine_info(realized)
            write_results(args.results, doc)
            print(render_text([row]), end="", flush=True)
    rows = doc["rows"]
    print("\n" + render_text(rows), end="", flush=True)
    print(f"wrote {args.results} and {os.path.splitext(args.results)[0]}.md", flush=True)
    return 0 if all(r.get("verified") and r.get("fact_ms") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
