"""Linear then subtract, multiply, ReLU: y = relu((x @ W.T + b - 2.0) * 1.5).

``nn.Linear(8192, 8192)`` on x (1024, 8192), float32, followed by an elementwise tail that
FACT fuses into the GEMM's epilogue. On the problem's own inputs (uniform in [0, 1)) the
linear's outputs stay far below 2, so ReLU zeroes every element: the float64 reference is
all zeros and cannot tell a right kernel from one writing zeros (verification also checks
on drawn inputs, see fact.optimize.verify).
"""

import torch
import torch.nn as nn

BATCH, IN_FEATURES, OUT_FEATURES = 1024, 8192, 8192


class Model(nn.Module):
    """relu((linear(x) - subtract_value) * multiply_value)."""

    def __init__(self, in_features: int, out_features: int, subtract_value: float,
                 multiply_value: float) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = x - self.subtract_value
        x = x * self.multiply_value
        return torch.relu(x)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (1024, 8192) on CPU, uniform in [0, 1)."""
    return [torch.rand(BATCH, IN_FEATURES)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``: features, subtract and multiply values."""
    return [IN_FEATURES, OUT_FEATURES, 2.0, 1.5]
