"""Standard matrix multiplication (KernelBench level 1 #2): C = A @ B, A (2048, 8192), B (8192, 4096).

Float32 inputs drawn uniform in [0, 1), as KernelBench draws them.
"""

import torch
import torch.nn as nn

M = 1024 * 2
K = 4096 * 2
N = 2048 * 2


class Model(nn.Module):
    """C = matmul(A, B) with A (M, K), B (K, N) (float32)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 inputs on CPU: A (M, K), B (K, N)."""
    return [torch.rand(M, K), torch.rand(K, N)]


def get_init_inputs() -> list:
    """``Model`` takes no constructor arguments."""
    return []
