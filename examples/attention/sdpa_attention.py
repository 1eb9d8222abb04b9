"""Causal self-attention written with F.scaled_dot_product_attention(is_causal=True).

The block of L3-43_mingpt_attention.py with the attention as one SDPA call: x is
(16, 1024, 1024) float32, 16 heads of head dim 64 (default scale 1 / 8). FACT finds one
causal attention pattern whose output is the merged (B, T, C) layout (the transpose +
contiguous + view after SDPA is absorbed) and two GEMMs.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16
seq_len = 1024
n_embd = 1024
n_head = 16


class Model(nn.Module):
    """c_proj(SDPA(heads of c_attn(x), is_causal=True)), no dropout."""

    def __init__(self, n_embd: int, n_head: int) -> None:
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (batch_size, seq_len, n_embd) on CPU, standard normal."""
    return [torch.randn(batch_size, seq_len, n_embd)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``: the width and the number of heads."""
    return [n_embd, n_head]
