"""A BERT-base encoder layer (post-norm), written by hand, with a key-padding mask.

x is (32, 512, 768) float32: batch 32, sequence 512, hidden 768; 12 heads of head dim 64;
FFN 3072 with GELU (the erf form); LayerNorm eps 1e-12 after each residual add, as BERT
does (Devlin et al., arXiv:1810.04805): h = LN(x + o(attn(x))); out = LN(h + fc2(gelu(fc1(h)))).
The second input is a key-padding mask (B, T) of ones and zeros, as a tokenizer returns it;
the layer turns it into an additive mask (1 - m) * finfo(float32).min broadcast over heads
and query rows, as Hugging Face's BERT does. Every sequence keeps at least its first key.

``small_init_inputs()`` / ``small_inputs()`` give the same layer at a size CI can export and
plan in seconds.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 32
seq_len = 512
hidden = 768
n_head = 12
ffn = 3072
ln_eps = 1e-12


class Model(nn.Module):
    """LN(x + attn(x, mask)) then LN(h + fc2(gelu(fc1(h))))."""

    def __init__(self, hidden: int, n_head: int, ffn: int, ln_eps: float) -> None:
        super().__init__()
        assert hidden % n_head == 0
        self.n_head, self.head_dim = n_head, hidden // n_head
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=ln_eps)
        self.fc1 = nn.Linear(hidden, ffn)
        self.fc2 = nn.Linear(ffn, hidden)
        self.out_norm = nn.LayerNorm(hidden, eps=ln_eps)

    def heads(self, t: torch.Tensor) -> torch.Tensor:
        B, T, _ = t.shape
        return t.view(B, T, self.n_head, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.heads(self.query(x)), self.heads(self.key(x)), self.heads(self.value(x))
        additive = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim) + additive
        ctx = (F.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        h = self.attn_norm(x + self.attn_out(ctx))
        return self.out_norm(h + self.fc2(F.gelu(self.fc1(h))))


def _padding_mask(b: int, t: int) -> torch.Tensor:
    """Ones for the first L_i keys of sequence i (L_i drawn in [1, t]), zeros after."""
    lengths = torch.randint(1, t + 1, (b,))
    return (torch.arange(t)[None, :] < lengths[:, None]).to(torch.float32)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (batch_size, seq_len, hidden) and a padding mask (batch_size, seq_len)."""
    return [torch.randn(batch_size, seq_len, hidden), _padding_mask(batch_size, seq_len)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``."""
    return [hidden, n_head, ffn, ln_eps]


def small_init_inputs() -> list:
    """The same layer at CI size: hidden 64, 2 heads of 32, FFN 256."""
    return [64, 2, 256, ln_eps]


def small_inputs() -> list[torch.Tensor]:
    """x (2, 16, 64) and its padding mask for ``small_init_inputs()``'s layer."""
    return [torch.randn(2, 16, 64), _padding_mask(2, 16)]
