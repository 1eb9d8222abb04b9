"""minGPT's causal self-attention (KernelBench level 3 #43), written by hand.

x is (128, 512, 768) float32: batch 128, sequence 512, n_embd 768, 8 heads of head dim 96.
c_attn projects to q, k, v; the heads are split by view + transpose; the attention is
softmax(q @ k^T * (1 / sqrt(96)) masked by the registered lower-triangular ``bias`` buffer)
@ v, with attention dropout p = 0.0; the heads are merged by transpose + contiguous + view
and c_proj projects back (residual dropout p = 0.0). FACT finds one causal attention
pattern (the tril buffer is proven causal, the merge is absorbed) and two GEMMs.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 128
max_seqlen = 1024
seq_len = 512
n_embd = 768
n_head = 8
attn_pdrop = 0.0
resid_pdrop = 0.0


class Model(nn.Module):
    """A vanilla multi-head masked self-attention layer with a projection at the end."""

    def __init__(self, n_embd: int, n_head: int, attn_pdrop: float, resid_pdrop: float,
                 max_seqlen: int) -> None:
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)  # key, query, value for all heads
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(attn_pdrop)
        self.resid_dropout = nn.Dropout(resid_pdrop)
        # Causal mask: each position attends to itself and the positions before it.
        self.register_buffer("bias", torch.tril(torch.ones(max_seqlen, max_seqlen))
                             .view(1, 1, max_seqlen, max_seqlen))
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()  # batch, sequence length, embedding width (n_embd)
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v  # (B, nh, T, T) x (B, nh, T, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble the heads side by side
        return self.resid_dropout(self.c_proj(y))


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (batch_size, seq_len, n_embd) on CPU, standard normal."""
    return [torch.randn(batch_size, seq_len, n_embd)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``."""
    return [n_embd, n_head, attn_pdrop, resid_pdrop, max_seqlen]
