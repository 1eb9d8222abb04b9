"""Writes the graph of every example under examples/ into this folder (<stem>.graph.json).

The candidate snapshot test (tests/engine/candidate_snapshot_test.cpp) discovers each graph
under each precision policy, renders every candidate realization would build and compares
their kernel names and cache keys with candidates.txt. Re-run this only when an example
changes: PYTHONPATH=python .venv/bin/python tests/golden/candidates/export_graphs.py

Models without buffers export on the meta device (no operand memory); a model with buffers
exports on the CPU, since a buffer's value class (a causal tril mask) is read from its contents.
"""

from __future__ import annotations

import glob
import os

import torch

from fact.export import export, write_graph
from fact.problem import load_problem

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))


def main() -> None:
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "**", "*.py"), recursive=True)):
        problem = load_problem(path)
        if not list(problem.model.buffers()):
            problem.to("meta")
        with torch.no_grad():
            graph = export(problem.model, problem.inputs)
        rel = os.path.relpath(path, os.path.join(ROOT, "examples"))
        stem = rel[:-3].replace(os.sep, "__")
        write_graph(graph, os.path.join(HERE, stem + ".graph.json"))
        print(stem)


if __name__ == "__main__":
    main()
