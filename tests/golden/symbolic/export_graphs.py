"""Writes the symbolic golden graphs of this folder (run from the repository root:
`.venv/bin/python tests/golden/symbolic/export_graphs.py`); each <name>.graph.json is the
input of tests/discover/symbolic_plan_test.cpp, which compares its plan with <name>.plan."""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "python"))
from fact.export import export, write_graph  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


class Mlp(torch.nn.Module):
    """x [B, 4, 64] -> linear 64->32 -> relu -> view [4B, 32] -> linear 32->16 -> [B, 4, 16]:
    both GEMMs have M = 4*B; the relu is the first one's tail."""

    def __init__(self):
        super().__init__()
        self.fc, self.fc2 = torch.nn.Linear(64, 32), torch.nn.Linear(32, 16)

    def forward(self, x):
        b, t, _ = x.shape
        return self.fc2(self.fc(x).relu().view(b * t, 32)).view(b, t, 16)


class KSymbolic(torch.nn.Module):
    """x [64, S] @ w [S, 64]: K = S. At odd S a row of x is not 16-byte aligned, so the GEMM
    holds at the hint (S = 8) but not for every size: it stays ATen."""

    def forward(self, x, w):
        return x @ w


def main():
    torch.manual_seed(0)
    b = torch.export.Dim("B", min=2, max=4096)
    write_graph(export(Mlp(), [torch.randn(8, 4, 64)], dynamic_shapes=({0: b},)),
                os.path.join(HERE, "mlp_batch.graph.json"))
    write_graph(export(Mlp(), [torch.randn(8, 4, 64)], dynamic_shapes=({0: b},),
                       buckets={"B": [16, 256, 1024]}),
                os.path.join(HERE, "mlp_batch_named_buckets.graph.json"))
    s = torch.export.Dim("S", min=2, max=1024)
    write_graph(export(KSymbolic(), [torch.randn(64, 8), torch.randn(8, 64)],
                       dynamic_shapes=({1: s}, {0: s})),
                os.path.join(HERE, "k_symbolic_odd_unaligned.graph.json"))


if __name__ == "__main__":
    main()
