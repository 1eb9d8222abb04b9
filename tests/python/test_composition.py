"""The measured composition (python/fact/composition.py) with stand-in variants, timer and
clock: keep-the-faster, the greedy ablation, its time bound, and the records."""

from __future__ import annotations

import pytest

from fact.composition import (HANDED_BACK, INDUCTOR_FASTER, Composition, compose,
                              composition_lines, pattern_groups)


def _entries() -> list[dict]:
    qkv = {"kind": "gemm", "m": 64, "n": 192, "k": 64}
    proj = {"kind": "gemm", "m": 64, "n": 64, "k": 64}
    return [{"id": "p0", "kernel": "gemm_a", "problem": qkv},
            {"id": "p1", "kernel": "attn", "problem": {"kind": "attention"}},
            {"id": "p2", "kernel": "gemm_a", "problem": proj},
            {"id": "p3", "kernel": "gemm_a", "problem": qkv},
            {"id": "p4", "problem": None}]


def test_groups_are_one_kernel_on_one_problem_in_manifest_order() -> None:
    assert pattern_groups(_entries()) == {"gemm_a": ["p0", "p3"], "attn": ["p1"],
                                          "gemm_a#2": ["p2"], "p4": ["p4"]}
    assert pattern_groups([]) == {}


def test_groups_are_tried_least_kernel_gain_first() -> None:
    entries = _entries()
    times = {"p0": (1.0, 0.5), "p3": (1.0, 0.5), "p1": (2.0, 1.9), "p2": (0.3, 0.4),
             "p4": (None, 0.2)}
    for e in entries:
        vendor, own = times[e["id"]]
        e.update(vendor_ms=vendor, time_ms=own)
    # p4: no vendor time; gemm_a#2 loses 0.1 ms; attn saves 0.1; gemm_a saves 2 x 0.5.
    assert list(pattern_groups(entries)) == ["p4", "gemm_a#2", "attn", "gemm_a"]


class _Model:
    """Module ms as a sum: a base, minus what each kept group saves (negative: costs)."""

    def __init__(self, base: float, saves: dict[str, float], alone: float) -> None:
        self.base, self.saves, self.alone = base, saves, alone
        self.built: list[tuple[str, ...]] = []
        self.timed: list[tuple[str, ...]] = []

    def ms(self, dropped: frozenset) -> float:
        return self.base - sum(v for g, v in self.saves.items() if g not in dropped)

    def build(self, dropped):
        key = tuple(sorted(dropped))
        self.built.append(key)
        return lambda: ("fact", frozenset(dropped))

    def timer(self, runners):
        out = {}
        for name, run in runners.items():
            kind, dropped = run()
            out[name] = self.alone if kind == "alone" else self.ms(dropped)
        self.timed.append(tuple(runners))
        return out


def test_the_ablation_drops_a_group_that_costs_and_keeps_one_that_pays() -> None:
    m = _Model(10.0, {"a": 2.0, "b": -1.0}, alone=9.5)
    c = compose(m.build, lambda: ("alone", None), {"A": ["a"], "B": ["b"]}, m.timer)
    assert c.choice == "fact" and c.dropped == ["b"]
    assert (c.fact_ms, c.inductor_ms, c.final_fact_ms, c.final_inductor_ms) == (9.0, 9.5, 8.0, 9.5)
    assert [(r.group, r.with_ms, r.without_ms, r.kept) for r in c.rows] == [
        ("A", 9.0, 11.0, True), ("B", 9.0, 8.0, False)]
    assert m.built == [(), ("a",), ("b",)]  # B tried from the module as it stood
    assert c.handed_back(["a", "b"]) == ["b"]


def test_inductor_alone_is_kept_when_faster_than_every_composition() -> None:
    m = _Model(10.0, {"a": 0.5}, alone=8.0)
    c = compose(m.build, lambda: ("alone", None), {"A": ["a"]}, m.timer)
    assert c.choice == "inductor" and c.dropped == []
    assert c.handed_back(["a"]) == ["a"]
    assert m.timed == [("fact", "inductor"), ("with", "without")]  # nothing dropped: no re-time


def test_a_tie_keeps_the_kernel() -> None:
    m = _Model(10.0, {"a": 0.0}, alone=20.0)
    c = compose(m.build, lambda: ("alone", None), {"A": ["a"]}, m.timer)
    assert c.rows[0].kept and c.dropped == []


def test_the_budget_stops_the_ablation_and_keeps_the_groups_not_tried() -> None:
    m = _Model(10.0, {"a": -1.0, "b": -1.0, "c": -1.0}, alone=50.0)
    now = [0.0]

    def clock():
        now[0] += 30.0  # each look at the clock: 30 s later
        return now[0]

    c = compose(m.build, lambda: ("alone", None), {"A": ["a"], "B": ["b"], "C": ["c"]},
                m.timer, budget_s=60.0, clock=clock)
    assert [(r.group, r.kept) for r in c.rows] == [("A", False), ("B", True), ("C", True)]
    assert c.rows[1].why == "not measured: the ablation's 60 s were spent"
    assert c.dropped == ["a"] and c.budget_s == 60.0


def test_no_budget_means_no_ablation() -> None:
    m = _Model(10.0, {"a": -1.0}, alone=50.0)
    c = compose(m.build, lambda: ("alone", None), {"A": ["a"]}, m.timer, budget_s=0)
    assert c.rows[0].with_ms is None and c.rows[0].kept and c.choice == "fact"


def test_a_variant_that_fails_keeps_its_group_with_the_reason() -> None:
    m = _Model(10.0, {"a": -1.0}, alone=50.0)

    def build(dropped):
        if dropped:
            raise RuntimeError("inductor broke")
        return m.build(dropped)

    c = compose(build, lambda: ("alone", None), {"A": ["a"]}, m.timer)
    assert c.rows[0].kept and c.rows[0].why == "not measured: RuntimeError: inductor broke"


def test_the_record_round_trips_and_bad_ones_are_refused() -> None:
    m = _Model(10.0, {"a": 2.0, "b": -1.0}, alone=9.5)
    c = compose(m.build, lambda: ("alone", None), {"A": ["a"], "B": ["b"]}, m.timer)
    assert Composition.from_json(c.to_json()) == c
    with pytest.raises(ValueError, match="composition: choice 'both'"):
        Composition.from_json({**c.to_json(), "choice": "both"})
    with pytest.raises(ValueError, match="composition:"):
        Composition.from_json({"choice": "fact"})


def test_the_report_lines_give_the_choice_and_the_table() -> None:
    m = _Model(10.0, {"a": 2.0, "b": -1.0}, alone=9.5)
    c = compose(m.build, lambda: ("alone", None), {"A": ["a"], "B": ["b"]}, m.timer)
    lines = composition_lines({"remainder": "inductor", "composition": c.to_json()})
    assert lines[0] == "- Remainder (the nodes outside FACT's kernels): inductor"
    assert "FACT+Inductor 9.0 ms against Inductor alone 9.5 ms" in lines[1]
    assert lines[1].endswith("**FACT+Inductor**")
    assert "| `B` | b | 9.0 | 8.0 | no | faster handed back to Inductor |" in lines
    assert composition_lines({}) == []
    assert HANDED_BACK != INDUCTOR_FASTER


@pytest.mark.parametrize("doc", [None, [], "fact", 3])
def test_a_record_that_is_not_an_object_is_a_value_error(doc) -> None:
    with pytest.raises(ValueError, match="composition: expected an object"):
        Composition.from_json(doc)
