"""Grouped-query causal attention (LLaMA-style): 32 query heads share 8 key/value heads.

x is (4, 2048, 4096) float32; head dim 128. q_proj, k_proj and v_proj (no bias) give 32
query and 8 key/value heads; K and V are repeated to 32 heads with repeat_interleave(4,
dim=1) and the attention is F.scaled_dot_product_attention(is_causal=True); the heads are
merged by transpose + contiguous + view and o_proj projects back. FACT finds one causal
attention pattern that swallows the repeats (it reads the 8 K/V heads directly, nothing is
repeated in memory) and writes the merged layout, and four GEMMs.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4
seq_len = 2048
hidden = 4096
n_head = 32
n_kv_head = 8


class Model(nn.Module):
    """o_proj(SDPA(q, repeat(k), repeat(v), is_causal=True)) with grouped K/V heads."""

    def __init__(self, hidden: int, n_head: int, n_kv_head: int) -> None:
        super().__init__()
        assert hidden % n_head == 0 and n_head % n_kv_head == 0
        self.n_head, self.n_kv_head = n_head, n_kv_head
        self.head_dim = hidden // n_head
        self.q_proj = nn.Linear(hidden, n_head * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, n_kv_head * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, n_kv_head * self.head_dim, bias=False)
        self.o_proj = nn.Linear(n_head * self.head_dim, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.size()
        q = self.q_proj(x).view(B, T, self.n_head, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv_head, self.head_dim).transpose(1, 2)
        n_rep = self.n_head // self.n_kv_head
        k = k.repeat_interleave(n_rep, dim=1)  # (B, n_head, T, head_dim)
        v = v.repeat_interleave(n_rep, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, self.n_head * self.head_dim)
        return self.o_proj(y)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (batch_size, seq_len, hidden) on CPU, standard normal."""
    return [torch.randn(batch_size, seq_len, hidden)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``: width, query heads, key/value heads."""
    return [hidden, n_head, n_kv_head]
