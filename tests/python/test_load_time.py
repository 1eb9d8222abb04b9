"""Which kernel inputs the generated module computes once at load (python/fact/load_time.py):
a value made from buffers and constant-size ops only, never one that reads a graph input, a
parameter, a random draw, a symbolic size or a node inside a kernel's pattern; and which of
the nodes making it the module no longer runs. The end-to-end case (the rotary tables of a
rope kernel built in forward) is tests/python/families/test_rope.py."""

from __future__ import annotations

from fact.load_time import constant_cones, droppable_nodes


def _node(name: str, op: str, *args, outputs: bool = True) -> dict:
    return {"name": name, "op": op, "args": list(args), "kwargs": {},
            "outputs": [{"name": name, "type": None}] if outputs else []}


def _graph(*nodes: dict) -> dict:
    return {"inputs": [{"name": "x", "type": None}],
            "params": [{"name": "b_inv_freq", "kind": "buffer"}, {"name": "p_w", "kind": "parameter"}],
            "nodes": list(nodes), "outputs": [{"ref": nodes[-1]["name"]}]}


R = lambda v: {"ref": v}  # noqa: E731


def _tables() -> list[dict]:
    # pos = arange(8); freqs = pos[:, None] * inv_freq; cos = freqs.cos(); an assertion on pos
    return [_node("pos", "aten.arange.default", 8),
            _node("check", "aten._assert_tensor_metadata.default", R("pos"), outputs=False),
            _node("col", "aten.unsqueeze.default", R("pos"), 1),
            _node("freqs", "aten.mul.Tensor", R("col"), R("b_inv_freq")),
            _node("cos", "aten.cos.default", R("freqs"))]


def test_a_table_of_a_buffer_and_constant_positions_is_folded_with_its_nodes() -> None:
    g = _graph(*_tables(), _node("y", "aten.mul.Tensor", R("x"), R("cos")))
    (cone,) = constant_cones(g, ["cos", "x"], owned=set())
    assert cone.value == "cos"
    assert [n["name"] for n in cone.nodes] == ["pos", "col", "freqs", "cos"]
    assert cone.sources == ["b_inv_freq"]
    running = {n["name"] for n in g["nodes"]}
    assert droppable_nodes(g, [cone], {}, running) == {"pos", "check", "col", "freqs", "cos"}
    # An intermediate value read elsewhere (here by y2) keeps its nodes running.
    g2 = _graph(*_tables(), _node("y2", "aten.add.Tensor", R("x"), R("freqs")))
    (cone2,) = constant_cones(g2, ["cos"], owned=set())
    assert droppable_nodes(g2, [cone2], {}, {n["name"] for n in g2["nodes"]}) == {"cos"}
    # ... unless that reader is inside a kernel's pattern (it does not run per call).
    assert droppable_nodes(g2, [cone2], {}, {n["name"] for n in g2["nodes"]} - {"y2"}) == \
        {"pos", "check", "col", "freqs", "cos"}


def test_inputs_parameters_draws_symbols_and_pattern_nodes_are_not_folded() -> None:
    cases = {
        "a graph input": [_node("t", "aten.cos.default", R("x"))],
        "a parameter": [_node("t", "aten.cos.default", R("p_w"))],
        "a random draw": [_node("r", "aten.rand.default", [8]), _node("t", "aten.cos.default", R("r"))],
        "a symbolic size": [_node("a", "aten.arange.default", {"sym": "T"}),
                            _node("t", "aten.cos.default", R("a"))],
        "a placeholder itself": [],
    }
    for what, nodes in cases.items():
        g = _graph(*(nodes or [_node("t", "aten.cos.default", R("b_inv_freq"))]))
        value = "t" if nodes else "b_inv_freq"
        assert constant_cones(g, [value], owned=set()) == [], what
    g = _graph(_node("t", "aten.cos.default", R("b_inv_freq")))
    assert constant_cones(g, ["t"], owned={"t"}) == []  # inside a kernel's pattern
    assert [c.value for c in constant_cones(g, ["t"], owned=set())] == ["t"]
