"""Square matrix multiplication (KernelBench level 1 #1): C = A @ B, A and B (4096, 4096).

Float32 inputs drawn uniform in [0, 1), as KernelBench draws them.
"""

import torch
import torch.nn as nn

N = 2048 * 2


class Model(nn.Module):
    """C = matmul(A, B) with A (N, N), B (N, N) (float32)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 inputs on CPU: A (N, N), B (N, N)."""
    return [torch.rand(N, N), torch.rand(N, N)]


def get_init_inputs() -> list:
    """``Model`` takes no constructor arguments."""
    return []
