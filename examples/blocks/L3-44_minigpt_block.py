"""A minGPT transformer block with KernelBench level 3 #44's shapes, written by hand.

x is (128, 512, 768) float32: batch 128, sequence 512, n_embd 768, 8 heads of head dim 96.
The block is pre-norm: x + attn(ln_1(x)), then x + mlp(ln_2(x)). The attention is level 3
#43's layer, loaded from examples/attention/L3-43_mingpt_attention.py (c_attn -> split -> heads by view + transpose -> softmax(q k^T / sqrt(96)) masked by a
registered tril buffer -> @ v -> heads merged -> c_proj); the MLP is c_fc -> NewGELU (the
tanh approximation written out) -> c_proj, and reaches its submodules through a lambda
captured in __init__ as #44 does. Dropouts have p = 0.0 (KernelBench never calls eval()).

``small_init_inputs()`` / ``small_inputs()`` give the same block at a size CI can export and
plan in seconds.
"""

import importlib.util
import math
import os
import sys

import torch
import torch.nn as nn

batch_size = 128
max_seqlen = 1024
seq_len = 512
n_embd = 768
n_head = 8
attn_pdrop = 0.0
resid_pdrop = 0.0


class NewGELU(nn.Module):
    """GELU's tanh approximation as GPT-2 writes it (Hendrycks and Gimpel, arXiv:1606.08415)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def _attention_layer() -> type:
    """Level 3 #43's layer, examples/attention/L3-43_mingpt_attention.py's Model (the block's
    attention is exactly that layer, so it is loaded from there rather than copied)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "attention", "L3-43_mingpt_attention.py")
    spec = importlib.util.spec_from_file_location("_l3_43_attention", path)
    module = importlib.util.module_from_spec(spec)
    # Registered like an imported module: torch.compile re-imports a forward's module by name.
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module.Model


CausalSelfAttention = _attention_layer()


class Model(nn.Module):
    """x + attn(ln_1(x)), then x + mlp(ln_2(x))."""

    def __init__(self, n_embd: int, n_head: int, attn_pdrop: float, resid_pdrop: float,
                 max_seqlen: int) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, attn_pdrop, resid_pdrop, max_seqlen)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, 4 * n_embd), c_proj=nn.Linear(4 * n_embd, n_embd),
                                      act=NewGELU(), dropout=nn.Dropout(resid_pdrop)))
        m = self.mlp
        self.mlpf = lambda x: m.dropout(m.c_proj(m.act(m.c_fc(x))))  # the MLP's forward, as #44 writes it

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlpf(self.ln_2(x))


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (batch_size, seq_len, n_embd) on CPU, standard normal."""
    return [torch.randn(batch_size, seq_len, n_embd)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``."""
    return [n_embd, n_head, attn_pdrop, resid_pdrop, max_seqlen]


def small_init_inputs() -> list:
    """The same block at CI size: n_embd 64, 2 heads of 32, max_seqlen 32."""
    return [64, 2, 0.0, 0.0, 32]


def small_inputs() -> list[torch.Tensor]:
    """x (2, 16, 64) for ``small_init_inputs()``'s block."""
    return [torch.randn(2, 16, 64)]
