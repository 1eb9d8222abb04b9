"""Linear then sigmoid, scale, residual add: y = sigmoid(h) * 2.0 + h, h = x @ W.T + b.

``nn.Linear(8192, 8192)`` on x (1024, 8192), float32. The tail reads the GEMM's result twice
(through sigmoid and as the residual); FACT fuses it into the GEMM's epilogue.
"""

import torch
import torch.nn as nn

BATCH, IN_FEATURES, OUT_FEATURES = 1024, 8192, 8192


class Model(nn.Module):
    """sigmoid(linear(x)) * scaling_factor + linear(x)."""

    def __init__(self, in_features: int, out_features: int, scaling_factor: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scaling_factor = scaling_factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        original_x = x
        x = torch.sigmoid(x)
        x = x * self.scaling_factor
        return x + original_x


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (1024, 8192) on CPU, uniform in [0, 1)."""
    return [torch.rand(BATCH, IN_FEATURES)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``: features and scaling factor."""
    return [IN_FEATURES, OUT_FEATURES, 2.0]
