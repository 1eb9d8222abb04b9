"""Linear then add a bias vector, ReLU: y = relu(x @ W.T + b + bias).

``nn.Linear(8192, 8192)`` on x (1024, 8192), float32; ``bias`` is a separate parameter of
shape (8192,) (randn * 0.1) broadcast along the rows: the fused epilogue reads it as a
vector along N.
"""

import torch
import torch.nn as nn

BATCH, IN_FEATURES, OUT_FEATURES = 1024, 8192, 8192


class Model(nn.Module):
    """relu(linear(x) + bias), bias a learnable (out_features,) vector."""

    def __init__(self, in_features: int, out_features: int) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.bias = nn.Parameter(torch.randn(out_features) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.linear(x)
        x = x + self.bias
        return torch.relu(x)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 x (1024, 8192) on CPU, uniform in [0, 1)."""
    return [torch.rand(BATCH, IN_FEATURES)]


def get_init_inputs() -> list:
    """Constructor arguments of ``Model``: in and out features."""
    return [IN_FEATURES, OUT_FEATURES]
