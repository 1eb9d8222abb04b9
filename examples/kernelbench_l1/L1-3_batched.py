"""Batched matrix multiplication (KernelBench level 1 #3): C[b] = A[b] @ B[b], 128 batches of (512, 1024) @ (1024, 2048).

Float32 inputs drawn uniform in [0, 1), as KernelBench draws them.
"""

import torch
import torch.nn as nn

batch_size = 128
m = 128 * 4
k = 256 * 4
n = 512 * 4


class Model(nn.Module):
    """C = bmm(A, B) with A (batch, m, k), B (batch, k, n) (float32)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 inputs on CPU: A (batch, m, k), B (batch, k, n)."""
    return [torch.rand(batch_size, m, k), torch.rand(batch_size, k, n)]


def get_init_inputs() -> list:
    """``Model`` takes no constructor arguments."""
    return []
