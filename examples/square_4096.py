"""Square matrix multiplication: C = A @ B with A, B of shape (4096, 4096), float32.

One ``aten.matmul`` of 2 * 4096^3 ≈ 137 GFLOP; compute bound on any recent GPU.
"""

import torch
import torch.nn as nn

N = 4096


class Model(nn.Module):
    """C[N, N] = A[N, N] @ B[N, N] via ``torch.matmul`` (float32)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


def get_inputs() -> list[torch.Tensor]:
    """Two fresh random float32 (4096, 4096) matrices on CPU."""
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs() -> list:
    """``Model`` takes no constructor arguments."""
    return []
