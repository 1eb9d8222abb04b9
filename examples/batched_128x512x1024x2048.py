"""Batched matrix multiplication: C[b] = A[b] @ B[b] for 128 batches, float32.

A is (128, 512, 1024), B is (128, 1024, 2048), C is (128, 512, 2048): one ``aten.bmm`` of
2 * 128 * 512 * 1024 * 2048 ≈ 275 GFLOP.
"""

import torch
import torch.nn as nn

BATCH, M, K, N = 128, 512, 1024, 2048


class Model(nn.Module):
    """C[L, M, N] = A[L, M, K] @ B[L, K, N] via ``torch.bmm`` (float32)."""

    def __init__(self) -> None:
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


def get_inputs() -> list[torch.Tensor]:
    """Fresh random float32 A (128, 512, 1024) and B (128, 1024, 2048) on CPU."""
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N)]


def get_init_inputs() -> list:
    """``Model`` takes no constructor arguments."""
    return []
