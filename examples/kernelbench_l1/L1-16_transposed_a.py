"""Matrix multiplication with A transposed (KernelBench level 1 #16): C = A.T @ B, A (8192, 2048), B (8192, 4096).

A.T is M-major (column-major): tf32 tensor cores read K-major operands only.

Float32 inputs drawn uniform in [0, 1), as KernelBench draws them.
"""

import torch
import torch.nn as nn

M = 1024 * 2
K = 4096 * 2
N = 2048 * 2


class Model(nn.Module):
    """C = matmul(A.T, B) with A (K, M), B (K, N) (float32)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A.T, B)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 inputs on CPU: A (K, M), B (K, N)."""
    return [torch.rand(K, M), torch.rand(K, N)]


def get_init_inputs() -> list:
    """``Model`` takes no constructor arguments."""
    return []
