"""The measured composition: FACT+Inductor against Inductor alone, and the per-pattern
ablation (docs/05-composition.md, "The measured composition"; the FACT paper's stage 3).

Whether a kernel that wins alone also wins inside a model is a property of the model: a
FACT kernel is an opaque call to Inductor, so its output is written to memory and read back
where Inductor would have fused the producer or the consumer into one of its own kernels.
So the composition is timed, on the example inputs, on the GPU in hand:

1. **FACT+Inductor against Inductor alone**, as first built (every kernel pattern in).
2. **Ablation, greedy, one group at a time.** A group is the kernel patterns of one kernel
   on one problem (the same GEMM in each of twelve layers is one group,
   :func:`pattern_groups`). For each group, the least kernel-level gain first: the module
   with the group's
   nodes handed back to Inductor (:func:`fact.remainder.handed_back`) is timed against the
   current module, alternating; the group is kept when the module with it is not slower,
   else dropped, and the next group is tried from there. Each variant is compiled by
   Inductor before it is timed, so the ablation costs about one Inductor compile per group:
   it stops when ``budget_s`` seconds have passed, and the groups not tried are kept
   ("not measured").
3. **Keep the faster**: the ablated module against Inductor alone; Inductor alone is chosen
   when it is faster, so a model is never slower than ``torch.compile`` beyond the noise of
   one timing.

The variants are built and timed by callables the caller passes (the backend and
:func:`fact.optimize` build them differently; the tests pass stand-ins), so this module
holds the decision logic alone.
"""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any, Callable, Mapping, Sequence

import torch

from fact.bench import time_variants
from fact.log import logger
from fact.manifest import aten_reasons
from fact.precision import fact_precision

__all__ = ["AblationRow", "Composition", "pattern_groups", "compose", "composed_module",
           "median_timer",
           "aten_patterns", "composition_lines", "HANDED_BACK", "INDUCTOR_FASTER"]

#: The ``aten_reason`` of a pattern the ablation handed back to Inductor.
HANDED_BACK = "handed back to Inductor: the module measured faster without this kernel"
#: Why no FACT kernel runs when Inductor alone measured faster.
INDUCTOR_FASTER = "Inductor alone measured faster than FACT+Inductor on this graph"

#: Runs one variant once on the example inputs (what the timer calls).
Runner = Callable[[], Any]
#: ``timer({name: runner}) -> {name: median ms}``: the runners timed alternating.
Timer = Callable[[Mapping[str, Runner]], Mapping[str, float]]


@dataclasses.dataclass
class AblationRow:
    """One group of the ablation.

    Attributes:
        group: the group's name (its kernel, or its first pattern id without one).
        patterns: the kernel pattern ids in it.
        with_ms / without_ms: the module's median ms with the group's kernels and with its
            nodes handed back to Inductor (``None`` when not measured).
        kept: whether the group's kernels run in the chosen composition (before step 3).
        why: the decision in words.
    """

    group: str
    patterns: list[str]
    with_ms: float | None
    without_ms: float | None
    kept: bool
    why: str


@dataclasses.dataclass
class Composition:
    """What the measured composition chose.

    Attributes:
        choice: ``"fact"`` (FACT+Inductor, the groups kept) or ``"inductor"`` (Inductor
            alone: no FACT kernel runs).
        fact_ms / inductor_ms: the first timing, every kernel in, against Inductor alone.
        final_fact_ms / final_inductor_ms: the last timing, the ablated module against
            Inductor alone.
        dropped: the kernel pattern ids handed back by the ablation.
        rows: the ablation table, one row per group.
        seconds: what the whole composition took (compiles included).
        budget_s: the ablation's time bound (``None``: none).
    """

    choice: str
    fact_ms: float
    inductor_ms: float
    final_fact_ms: float
    final_inductor_ms: float
    dropped: list[str]
    rows: list[AblationRow]
    seconds: float
    budget_s: float | None

    def to_json(self) -> dict:
        """As a JSON-ready dict (the result row's ``composition``)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> "Composition":
        """The inverse of :meth:`to_json`.

        Raises:
            ValueError: a member is missing or of the wrong kind.
        """
        if not isinstance(doc, Mapping):
            raise ValueError(f"composition: expected an object, found {type(doc).__name__}")
        try:
            rows = [AblationRow(**r) for r in doc.get("rows", [])]
            out = cls(**{**dict(doc), "rows": rows})
        except (TypeError, AttributeError) as exc:
            raise ValueError(f"composition: {exc}") from exc
        if out.choice not in ("fact", "inductor") or not isinstance(out.dropped, list) \
                or not all(isinstance(p, str) for p in out.dropped):
            raise ValueError(f"composition: choice {out.choice!r} / dropped {out.dropped!r}")
        return out

    def handed_back(self, kernel_ids: Sequence[str]) -> list[str]:
        """The kernel pattern ids (of ``kernel_ids``, the module's) that do not run their
        kernel in this composition: all of them when Inductor alone was chosen."""
        if self.choice == "inductor":
            return list(kernel_ids)
        return [p for p in kernel_ids if p in set(self.dropped)]


def pattern_groups(kernel_entries: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Kernel patterns (manifest entries of :func:`fact.runtime.kernel_patterns`) grouped
    by kernel and problem: ``{group name: [pattern ids]}``, in the order the ablation tries
    them: the least kernel-level gain first (the sum over the group of the manifest's
    ``vendor_ms - time_ms``, what realize measured the kernel to save against the vendor
    path; a group without both times first of all), ties in manifest order. The name is
    the kernel's, with ``#2``, ``#3`` for the same kernel on another problem."""
    keys: dict[str, str] = {}
    groups: dict[str, list[str]] = {}
    gains: dict[str, float] = {}
    for p in kernel_entries:
        kernel = str(p.get("kernel") or p["id"])
        key = json.dumps([kernel, p.get("problem")], sort_keys=True, default=str)
        if key not in keys:
            n = sum(1 for k in keys if json.loads(k)[0] == kernel)
            keys[key] = kernel if n == 0 else f"{kernel}#{n + 1}"
            groups[keys[key]] = []
            gains[keys[key]] = 0.0
        groups[keys[key]].append(str(p["id"]))
        vendor, own = p.get("vendor_ms"), p.get("time_ms")
        known = isinstance(vendor, (int, float)) and isinstance(own, (int, float))
        gains[keys[key]] += (vendor - own) if known else float("-inf")
    order = sorted(groups, key=lambda g: gains[g])  # stable: ties stay in manifest order
    return {g: groups[g] for g in order}


def _ms(x: float) -> float:
    return float(f"{x:.4g}")


def compose(build: Callable[[Sequence[str]], Runner], alone: Runner,
            groups: Mapping[str, Sequence[str]], timer: Timer,
            budget_s: float | None = 120.0,
            clock: Callable[[], float] = time.perf_counter) -> Composition:
    """Steps 1-3 of the module docstring.

    Args:
        build: ``build(dropped ids)`` -> a runner of the FACT module with those kernel
            patterns handed back (``build([])``: every kernel in). It compiles the variant
            (its first call) before returning, so that the timer times runs, not compiles.
        alone: a runner of Inductor alone on the same graph, compiled.
        groups: :func:`pattern_groups` of the module's kernel patterns.
        timer: times runners alternating, median ms each.
        budget_s: the ablation stops trying groups after this many seconds (``None``: no
            bound; 0: no ablation, only steps 1 and 3).
        clock: seconds (tests pass a stand-in).

    Returns:
        The :class:`Composition`. A variant that raises while it is built or timed keeps
        its group (the error is the row's ``why``).
    """
    start = clock()
    current = build([])
    first = timer({"fact": current, "inductor": alone})
    dropped: list[str] = []
    rows: list[AblationRow] = []
    for name, ids in groups.items():
        if budget_s is not None and clock() - start >= budget_s:
            rows.append(AblationRow(name, list(ids), None, None, True,
                                    f"not measured: the ablation's {budget_s:g} s were spent"))
            continue
        try:
            candidate = build(dropped + list(ids))
            t = timer({"with": current, "without": candidate})
        except Exception as exc:  # any failure keeps the group, with its reason
            rows.append(AblationRow(name, list(ids), None, None, True,
                                    f"not measured: {type(exc).__name__}: {exc}"))
            continue
        keep = t["with"] <= t["without"]
        rows.append(AblationRow(name, list(ids), _ms(t["with"]), _ms(t["without"]), keep,
                                "faster with it" if keep else "faster handed back to Inductor"))
        if not keep:
            dropped += list(ids)
            current = candidate
        logger.info("composition: %s (%d pattern%s): %.4g ms with, %.4g ms without: %s", name,
                    len(ids), "" if len(ids) == 1 else "s", t["with"], t["without"],
                    "kept" if keep else "handed back")
    last = timer({"fact": current, "inductor": alone}) if dropped else first
    choice = "fact" if last["fact"] <= last["inductor"] else "inductor"
    return Composition(choice, _ms(first["fact"]), _ms(first["inductor"]), _ms(last["fact"]),
                       _ms(last["inductor"]), dropped, rows, round(clock() - start, 2),
                       budget_s)


def composed_module(module: Any, inputs: Sequence[Any], policy: str, remainder: str = "inductor",
                    measure: bool = True, budget_s: float | None = 120.0, trials: int = 20
                    ) -> tuple[Any, Composition | None]:
    """A :class:`fact.runtime.FactModule` under ``remainder``; with ``"inductor"``, the
    patterns the ATen check disabled handed back to Inductor, and, on CUDA inputs with
    ``measure``, the measured composition (:func:`compose`, ``trials`` per timing; Inductor
    alone is the module with every kernel pattern handed back). Returns the module chosen
    (a new one when patterns were handed back) and the composition (``None`` when not
    measured)."""
    from fact.runtime import kernel_patterns
    module.set_remainder(remainder)
    if remainder != "inductor":
        return module, None
    disabled = module.disabled_patterns()
    if disabled:  # their ATen nodes run anyway: fused by Inductor now, with the reason
        module = module.handing_back(sorted(disabled), disabled)
    ids = [p["id"] for p in kernel_patterns(module.manifest)]
    if not measure or not any(isinstance(x, torch.Tensor) and x.is_cuda for x in inputs):
        return module, None

    def runner(variant: Any) -> Any:
        def run() -> Any:
            with torch.no_grad(), fact_precision(policy):
                return variant(*inputs)
        run()  # compiled by Inductor here, not in the timing
        return run

    built: dict[frozenset, Any] = {}  # the variants the ablation built, by what they drop

    def build(dropped: Sequence[str]) -> Any:
        variant = module if not dropped else module.handing_back(dropped, HANDED_BACK)
        built[frozenset(dropped)] = variant
        return runner(variant)

    alone = module.handing_back(ids, INDUCTOR_FASTER) if ids else module
    composition = compose(build, runner(alone), pattern_groups(kernel_patterns(module.manifest)),
                          median_timer(trials), budget_s)
    if composition.choice == "inductor":
        return alone, composition
    return built[frozenset(composition.dropped)], composition  # compiled already


def median_timer(trials: int = 20) -> Timer:
    """The :data:`Timer` of :func:`compose`: :func:`fact.bench.time_variants` (alternating,
    an L2 flush before each trial on CUDA), ``trials`` trials, the median ms of each."""
    def timer(runners: Mapping[str, Runner]) -> dict[str, float]:
        return {k: t.median_ms for k, t in time_variants(runners, trials=trials).items()}
    return timer


def aten_patterns(module: Any) -> dict[str, str]:
    """Pattern id -> why its kernel does not run in ``module``: the bindings disabled (e.g. a
    causal mask's buffer changed) and the manifest's kernel entries marked ``impl: "aten"``
    with an ``aten_reason`` (handed back to Inductor, or no GPU to run them on)."""
    out = dict(module.disabled_patterns())
    for pid, why in aten_reasons(module.manifest).items():
        if why:
            out.setdefault(pid, why)
    return out



def composition_lines(row: Mapping[str, Any]) -> list[str]:
    """The report's lines for a result row's ``remainder`` and ``composition`` (markdown:
    a bullet, then the ablation table); none when the row has neither."""
    lines: list[str] = []
    if row.get("remainder"):
        failed = row.get("remainder_failed")
        lines.append(f"- Remainder (the nodes outside FACT's kernels): {row['remainder']}"
                     + (f" (Inductor failed: {failed})" if failed else ""))
    comp = row.get("composition")
    if not comp:
        return lines
    chosen = ("Inductor alone (no FACT kernel runs)" if comp["choice"] == "inductor"
              else "FACT+Inductor")
    lines += [f"- Composition: FACT+Inductor {comp['fact_ms']} ms against Inductor alone "
              f"{comp['inductor_ms']} ms as built; {comp['final_fact_ms']} / "
              f"{comp['final_inductor_ms']} ms after the ablation ({comp['seconds']} s, "
              f"budget {comp['budget_s']} s): **{chosen}**", ""]
    if comp.get("rows"):
        lines += ["| pattern group | patterns | module ms with | without (handed back) | kept | why |",
                  "|---|---|---|---|---|---|"]
        for r in comp["rows"]:
            ids = r["patterns"]
            shown = ", ".join(ids[:4]) + (f" (+{len(ids) - 4})" if len(ids) > 4 else "")
            lines.append(f"| `{r['group']}` | {shown} | {r['with_ms'] if r['with_ms'] is not None else '—'} | "
                         f"{r['without_ms'] if r['without_ms'] is not None else '—'} | "
                         f"{'yes' if r['kept'] else 'no'} | {r['why']} |")
        lines.append("")
    return lines
