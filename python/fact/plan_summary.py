"""What a plan left to ATen, and why, in a few words (docs/03-rules.md: ``rejected`` and
``fallback``).

A plan lists every node outside its patterns under ``fallback`` (with ``no rule matches``,
or the pattern that took its nodes) and every node a rule refused under ``rejected`` (with
the rule's reason). :func:`aten_ops` counts them by ATen op and reason; :func:`unmatched_text`
names the most frequent ones, for the message a user sees when nothing matched.
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping

__all__ = ["aten_ops", "unmatched_text", "NothingMatched", "TOP"]

#: How many (op, reason) groups the message names.
TOP = 5

# Ops that move no data (views, aliases): they stay ATen in every plan and explain nothing.
_FREE = {"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default",
         "aten.transpose.int", "aten.t.default", "aten.permute.default", "aten.alias.default",
         "aten.unsqueeze.default", "aten.squeeze.dim", "aten.expand.default",
         "aten.slice.Tensor", "aten.select.int", "aten.split.Tensor", "aten.detach.default"}


def aten_ops(plan: Mapping) -> list[tuple[str, str, int]]:
    """``(op, reason, count)`` of the plan's nodes left to ATen, most frequent first.

    A node a rule rejected counts once, with the first rule's reason (``"gemm: operand a
    dtype int64: ..."``); the other ``fallback`` nodes count with theirs (``"no rule
    matches"``). Views and aliases (they move no data) are left out. Ties keep graph order.
    """
    rejected: dict[str, tuple[str, str]] = {}
    for r in plan.get("rejected", []) or []:
        node = r.get("node", "?")
        if node not in rejected:
            rejected[node] = (r.get("op", "?"), f"{r.get('rule', '?')}: {r.get('reason', '')}")
    counts: Counter[tuple[str, str]] = Counter()
    order: dict[tuple[str, str], int] = {}
    seen: set[str] = set()
    entries = [(n, *rejected[n]) for n in rejected]
    for f in plan.get("fallback", []) or []:
        node = f.get("node", "?")
        if node not in rejected:
            entries.append((node, f.get("op", "?"), f.get("reason", "no rule matches")))
    for node, op, reason in entries:
        if node in seen or op in _FREE:
            continue
        seen.add(node)
        key = (op, reason)
        order.setdefault(key, len(order))
        counts[key] += 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], order[kv[0]]))
    return [(op, reason, n) for (op, reason), n in ranked]


def unmatched_text(plan: Mapping, top: int = TOP) -> str:
    """One sentence naming the ops a plan left to ATen and why, the ``top`` most frequent
    with their counts: ``"3 ops stay ATen: aten.conv2d.default x2 (no rule matches),
    aten.relu.default x1 (no rule matches)"``; ``"no ops that move data"`` when there are
    none (an empty graph, or views only)."""
    ops = aten_ops(plan)
    total = sum(n for _, _, n in ops)
    if not total:
        return "no ops that move data"
    shown = ", ".join(f"{op} x{n} ({reason})" for op, reason, n in ops[:top])
    more = len(ops) - top
    tail = f", and {more} more kind{'s' if more != 1 else ''}" if more > 0 else ""
    return f"{total} op{'s' if total != 1 else ''} stay ATen: {shown}{tail}"


class NothingMatched(Exception):
    """Discovery found no pattern in a graph; the message names the ops left to ATen and why
    (:func:`unmatched_text`). Attributes: ``plan`` (the plan dict)."""

    def __init__(self, plan: Mapping) -> None:
        self.plan = plan
        super().__init__(f"nothing matched: {unmatched_text(plan)}")
