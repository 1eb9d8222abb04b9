"""Tall-skinny matrix multiplication (KernelBench level 1 #9): A (32768, 32) @ B (32, 32768).

K = 32; the 4 GiB output dominates.

Float32 inputs drawn uniform in [0, 1), as KernelBench draws them.
"""

import torch
import torch.nn as nn

M = 16384 * 2
N = 16 * 2


class Model(nn.Module):
    """C = matmul(A, B) with A (M, N), B (N, M) (float32)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 inputs on CPU: A (M, N), B (N, M)."""
    return [torch.rand(M, N), torch.rand(N, M)]


def get_init_inputs() -> list:
    """``Model`` takes no constructor arguments."""
    return []
