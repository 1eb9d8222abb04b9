"""Small models for the backend and artifact tests: a MiniGPT-like language model (token
and position embeddings, causal self-attention written out as minGPT does, a GELU MLP,
LayerNorms, the LM head), a model with a graph break, and a Conv2d model no rule matches."""

from __future__ import annotations

import math

import torch
import torch.nn as nn

__all__ = ["MiniGPT", "GraphBreak", "ConvNet", "mini_gpt_inputs"]


class _SelfAttention(nn.Module):
    def __init__(self, c: int, heads: int, block: int) -> None:
        super().__init__()
        self.c_attn, self.c_proj, self.heads = nn.Linear(c, 3 * c), nn.Linear(c, c), heads
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block,
                                                                              block))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(c, dim=2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        y = torch.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c))


class _Block(nn.Module):
    def __init__(self, c: int, heads: int, block: int) -> None:
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(c), _SelfAttention(c, heads, block)
        self.ln_2 = nn.LayerNorm(c)
        self.fc, self.proj = nn.Linear(c, 4 * c), nn.Linear(4 * c, c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.proj(torch.nn.functional.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class MiniGPT(nn.Module):
    """minGPT's structure, small: vocab 64, 2 layers, 4 heads of 8, block 16."""

    def __init__(self, vocab: int = 64, c: int = 32, heads: int = 4, layers: int = 2,
                 block: int = 16) -> None:
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, c), nn.Embedding(block, c)
        self.blocks = nn.ModuleList(_Block(c, heads, block) for _ in range(layers))
        self.ln_f, self.head = nn.LayerNorm(c), nn.Linear(c, vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def mini_gpt_inputs(batch: int = 2, t: int = 16, vocab: int = 64) -> list[torch.Tensor]:
    """Token indices ``[batch, t]`` (int64), fixed seed."""
    gen = torch.Generator().manual_seed(0)
    return [torch.randint(0, vocab, (batch, t), generator=gen)]


class GraphBreak(nn.Module):
    """Two linears with a graph break between them (two Dynamo subgraphs)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(16, 32), nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.a(x))
        torch._dynamo.graph_break()
        return self.b(h) * 2.0


class ConvNet(nn.Module):
    """A convolution and a ReLU: no FACT rule matches either."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))
