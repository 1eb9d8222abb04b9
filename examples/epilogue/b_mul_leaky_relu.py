"""Linear then multiply, LeakyReLU: y = leaky_relu((x @ W.T + b) * 2.0, 0.1).

``nn.Linear(8192, 8192)`` on x (1024, 8192), float32, followed by an elementwise tail that
FACT fuses into the GEMM's epilogue.
"""

import torch
import torch.nn as nn

BATCH, IN_FEATURES, OUT_FEATURES = 1024, 8192, 8192


class Model(nn.Module):
    """leaky_relu(linear(x) * multiplier, negative_slope)."""

    def __init__(self, in_features: int, out_features: int, multiplier: float,
                 negative_slope: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.leaky_relu = nn.LeakyReLU(negative_slope)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = x * self.multiplier
        return self.leaky_relu(x)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (1024, 8192) on CPU, uniform in [0, 1)."""
    return [torch.rand(BATCH, IN_FEATURES)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``: features, multiplier and negative slope."""
    return [IN_FEATURES, OUT_FEATURES, 2.0, 0.1]
