"""Linear then add a vector, Swish, tanh, GELU, hardtanh.

y = hardtanh(gelu(tanh(swish(x @ W.T + b + v))), -1, 1), v a learnable (8192,) vector
(randn * 0.02). ``nn.Linear(8192, 8192)`` on x (1024, 8192), float32; the fused epilogue
reads v as a vector along N.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH, IN_FEATURES, OUT_FEATURES = 1024, 8192, 8192


class Model(nn.Module):
    """hardtanh(gelu(tanh(swish(linear(x) + add_value))), -1, 1)."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.add_value = nn.Parameter(torch.randn(out_features) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = x + self.add_value
        x = torch.sigmoid(x) * x  # Swish
        x = torch.tanh(x)
        x = F.gelu(x)
        return F.hardtanh(x, min_val=-1.0, max_val=1.0)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (1024, 8192) on CPU, uniform in [0, 1)."""
    return [torch.rand(BATCH, IN_FEATURES)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``: in and out features."""
    return [IN_FEATURES, OUT_FEATURES]
