"""Shared attention test cases: manifests of attention patterns over a stand-in kernel
library (tests/python/fake_attention.c, the ``attention_library`` fixture of conftest.py),
and minGPT's causal self-attention at a small size with the nodes its pattern replaces."""

from __future__ import annotations

import ctypes
import json
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

from artifacts import write_artifact
from fact.export import export, write_graph
from fact.families.attention import FactAttentionArgs

__all__ = ["attn_artifact", "attn_pattern", "attn_problem", "discover_plan", "last_args",
           "MinGptAttention", "MINGPT_NODES", "mingpt_artifact", "mingpt_qkv"]


def discover_plan(tmp_path, graph: dict) -> dict:
    """The real engine's plan (``factc discover``) of an exported ``graph``; skips the test
    when the engine is not built."""
    import subprocess

    import pytest

    from fact.factc import FactcError, find_factc
    try:
        factc = find_factc()
    except FactcError as exc:
        pytest.skip(f"the engine is not built: {exc}")
    write_graph(graph, tmp_path / "discover-graph.json")
    subprocess.run([factc, "discover", str(tmp_path / "discover-graph.json"), "-o",
                    str(tmp_path / "discover-plan.json")], check=True, capture_output=True)
    return json.loads((tmp_path / "discover-plan.json").read_text())


def attn_artifact(tmp_path, graph: dict, patterns: list[dict], lib: str) -> str:
    """``tmp_path/artifact`` with ``graph``, a manifest of ``patterns`` and ``lib`` as its
    kernel library; returns its path."""
    return write_artifact(tmp_path, graph, patterns, lib)


def attn_pattern(nodes: list[str], output: str, operands: dict, problem: dict, symbol: str,
                 pid: str = "p0") -> dict:
    """A manifest entry of an attention pattern whose winner is kernel ``symbol``."""
    return {"id": pid, "rule": "attention", "abi": "attention", "nodes": nodes,
            "output": output, "operands": operands, "problem": problem, "impl": "cutlass",
            "kernel": f"{symbol}_kernel", "symbol": symbol, "workspace_bytes": 0,
            "verified": True}


def attn_problem(b: int, h: int, hkv: int, tq: int, tk: int, d: int, mask: str, o: list[int],
                 layout: str, strides: dict | None = None) -> dict:
    """An attention problem (float32, scale 1/sqrt(d)) with output strides ``o``."""
    s = {"q": None, "k": None, "v": None, "mask": None, **(strides or {}), "o": o}
    return {"kind": "attention", "batch": b, "heads": h, "kv_heads": hkv, "seq_q": tq,
            "seq_k": tk, "head_dim": d, "dtype": "float32", "scale": 1.0 / math.sqrt(d),
            "mask": mask, "strides": s, "output_layout": layout}


def last_args(art: str) -> FactAttentionArgs:
    """The arguments the stand-in's latest run saw (the copy the artifact loaded)."""
    return FactAttentionArgs.in_dll(ctypes.CDLL(os.path.join(art, "libfact_kernels.so")),
                                    "fa_last")


# ------------------------------------------------------------------ minGPT

class MinGptAttention(nn.Module):
    """minGPT's causal self-attention (KernelBench L3-43) at a small size: B=2, T=8, C=32,
    4 heads of 8; the mask is a registered tril buffer sliced to T."""

    def __init__(self, n_embd: int = 32, n_head: int = 4, max_seqlen: int = 16) -> None:
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(0.0)
        self.register_buffer("bias", torch.tril(torch.ones(max_seqlen, max_seqlen))
                             .view(1, 1, max_seqlen, max_seqlen))
        self.n_head, self.n_embd = n_head, n_embd

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


# The nodes the attention kernel replaces in the exported minGPT graph: from k's transpose
# to the head merge (transpose, contiguous, view), the mask chain on the buffer included.
MINGPT_NODES = ["transpose_3", "matmul", "mul", "slice_1", "slice_2", "eq", "masked_fill",
                 "softmax", "dropout", "matmul_1", "transpose_4", "contiguous", "view_3"]


def mingpt_artifact(tmp_path, lib: str, model: nn.Module | None = None,
                    mark_tril: bool = True) -> tuple[str, nn.Module]:
    """An artifact of ``model`` (default: a fresh seeded :class:`MinGptAttention`) whose one
    pattern is the causal attention, kernel ``fa_causal`` of ``lib``. Without ``mark_tril``
    the graph loses export's ``"value": "tril"`` on the buffer. Returns (path, model)."""
    torch.manual_seed(0)
    model = model or MinGptAttention()
    graph = export(model, [torch.randn(2, 8, 32, device=model.bias.device)])
    names = [n["name"] for n in graph["nodes"]]
    assert all(n in names for n in MINGPT_NODES), names
    (bias,) = [p for p in graph["params"] if p["name"] == "b_bias"]
    if not mark_tril:  # a graph exported before buffers recorded their value class
        bias.pop("value", None)
    # q/k/v are [2, 4, 8, 8] views of the [2, 8, 96] projection: batch 768, head 8, row 96.
    qkv = [768, 8, 96]
    problem = attn_problem(2, 4, 4, 8, 8, 8, "causal", [256, 8, 32], "bthd",
                       {"q": qkv, "k": qkv, "v": qkv})
    pattern = attn_pattern(MINGPT_NODES, "view_3",
                       {"q": "transpose_1", "k": "transpose", "v": "transpose_2"},
                       problem, "fa_causal")
    return attn_artifact(tmp_path, graph, [pattern], lib), model


def mingpt_qkv(model: MinGptAttention, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """q, k, v as the graph computes them: views of one [B, T, 3C] tensor."""
    B, T, C = x.shape
    q, k, v = model.c_attn(x).split(C, dim=2)
    return tuple(t.view(B, T, model.n_head, C // model.n_head).transpose(1, 2)
                 for t in (q, k, v))
