"""What a user sees (issue: an API that says what it is doing): fact.optimize on a machine
without a GPU, a model nothing matches (with the real engine's discovery), progress bars on
a terminal and not elsewhere, and ``fact report`` re-rendering an artifact's report."""

from __future__ import annotations

import io
import json
import os
import traceback

import pytest
import torch
import torch.nn as nn

import fact
import fact.log
from fact.cli import EXIT_CODES, main
from fact.log import FactWarning
from fact.factc import FactcError, find_factc
from mini_models import ConvNet


class _TTY(io.StringIO):
    """A terminal, as far as isatty() says."""

    def isatty(self) -> bool:
        return True


class _Two(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(16, 32), nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x)))


@pytest.fixture(autouse=True)
def _no_gpu(monkeypatch):
    """This machine, without a GPU whatever it has (what the messages are about)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_optimize_without_a_gpu_says_what_it_did_and_touches_no_cuda(tmp_path, fake_factc,
                                                                     caplog) -> None:
    caplog.set_level("INFO", logger="fact")
    model, x = _Two().eval(), torch.randn(4, 16)
    fact.log._said.discard("optimize:no-gpu")
    # Said first, as a warning too (a logger without handlers shows nothing).
    with pytest.raises(fact.GpuRequired) as raised, \
            pytest.warns(FactWarning, match=r"^no GPU here \(torch.cuda.is_available"):
        fact.optimize(model, [x], precision="tf32", device="cuda", out_dir=str(tmp_path / "o"))
    exc = raised.value
    # The traceback's last line names a class users can reach: fact.GpuRequired.
    assert traceback.format_exception_only(exc)[0].startswith("fact.GpuRequired: ")
    assert str(exc) == ("verification and tuning need a GPU: discovered 2 patterns, compiled 2 "
                        "kernels (cache: /tmp/fake-cache); stopping")
    assert exc.details() == (
        "next: run it where a CUDA GPU (sm_90a: H100/H200) is present, to verify the "
        "kernels against float64, tune them against the vendor library and compose the module\n"
        f"files: {tmp_path / 'o'} (graph.json, plan.json, realized.json)")
    assert [r.getMessage() for r in caplog.records] == [
        "no GPU here (torch.cuda.is_available() is False): verifying the kernels against "
        "float64, tuning them against the vendor library and running the optimized module "
        "need a CUDA GPU (sm_90a: H100/H200)",
        "not moving the model to cuda: exporting, discovering and compiling only",
        "_Two: exporting the graph", "_Two: discovering patterns (3 nodes)",
        "_Two: realizing 2 patterns (budget all candidates)"]
    # Nothing was moved: the model and the inputs are where they were, CUDA untouched.
    assert next(model.parameters()).device.type == "cpu"
    assert not torch.cuda.is_initialized()


def _real_factc() -> str:
    try:
        return find_factc()
    except FactcError:
        pytest.skip("needs the engine (build/factc or FACT_FACTC)")


def test_nothing_matched_names_the_ops_left_to_aten(tmp_path, monkeypatch) -> None:
    factc = _real_factc()
    monkeypatch.setenv("FACT_FACTC", factc)
    model, x = ConvNet().eval(), torch.randn(2, 3, 8, 8)
    with pytest.raises(fact.GpuRequired) as raised:
        fact.optimize(model, [x], precision="fp32", out_dir=str(tmp_path / "o"),
                      cache=str(tmp_path / "cache"))
    assert str(raised.value).splitlines() == [
        "verification and tuning need a GPU: discovered 0 patterns, compiled 0 kernels "
        f"(cache: {tmp_path / 'cache'}); stopping",
        "nothing matched: 2 ops stay ATen: aten.conv2d.default x1 (no rule matches), "
        "aten.relu.default x1 (no rule matches)"]
    assert raised.value.unmatched.startswith("2 ops stay ATen")


def test_progress_bars_on_a_terminal_and_not_elsewhere(tmp_path, fake_factc,
                                                        monkeypatch) -> None:
    monkeypatch.setenv("FAKE_FACTC_GPU", "Fake GPU")
    model, x = _Two().eval(), torch.randn(4, 16)
    tty = _TTY()
    monkeypatch.setattr("sys.stderr", tty)
    fact.optimize(model, [x], precision="fp32", out_dir=str(tmp_path / "a"),
                  problem_name="two")
    shown = tty.getvalue()
    # tqdm redraws in place; the last frame of each bar is complete.
    assert "two: compile: 100%" in shown and "2/2" in shown
    assert "two: tune: 100%" in shown and "p1 winner" in shown
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    fact.optimize(model, [x], precision="fp32", out_dir=str(tmp_path / "b"))
    assert "%|" not in pipe.getvalue()  # no bar (log lines may be there: the CLI's handler)
    # Asked for, they show on a pipe too.
    fact.optimize(model, [x], precision="fp32", out_dir=str(tmp_path / "c"), progress=True)
    assert "compile: 100%" in pipe.getvalue()


def test_progress_bars_in_the_cli(tmp_path, fake_factc, monkeypatch, capsys) -> None:
    problem = tmp_path / "two.py"
    problem.write_text("import torch\nimport torch.nn as nn\n\n"
                       "class Model(nn.Module):\n"
                       "    def __init__(self):\n        super().__init__()\n"
                       "        self.fc = nn.Linear(16, 8)\n\n"
                       "    def forward(self, x):\n        return self.fc(x)\n\n"
                       "def get_inputs():\n    return [torch.randn(4, 16)]\n\n"
                       "def get_init_inputs():\n    return []\n")
    assert main(["optimize", str(problem), "--out", str(tmp_path / "o"), "--progress"]) == 3
    err = capsys.readouterr().err
    assert "two: compile: 100%" in err and "1/1" in err


def test_fact_report_rerenders_the_artifacts_report(tmp_path, fake_factc, monkeypatch,
                                                    capsys) -> None:
    monkeypatch.setenv("FAKE_FACTC_GPU", "Fake GPU")
    model, x = _Two().eval(), torch.randn(4, 16)
    fast = fact.optimize(model, [x], precision="fp32", out_dir=str(tmp_path / "o"))
    art = fast.report["artifact"]
    os.remove(os.path.join(art, "report.md"))  # re-rendered from result.json and the manifest
    assert main(["report", art]) == 0
    text = capsys.readouterr().out
    assert "## Module" in text and "- Policy: `fp32`\n- Verified: yes, on own inputs" in text
    assert "## Environment" in text and "| gpu | Fake GPU | — |" in text
    assert "This machine has no GPU: `fact.load` runs every node as its ATen op." in text
    assert open(os.path.join(art, "report.md")).read() == text
    result = json.load(open(os.path.join(art, "result.json")))
    assert result["row"]["verified"] is True
    assert main(["report", str(tmp_path)]) == 2
    assert "is not an artifact: no manifest.json" in capsys.readouterr().err


def test_exit_codes_are_distinct_and_documented(repo_root) -> None:
    assert sorted(EXIT_CODES) == [0, 1, 2, 3]
    doc = open(os.path.join(repo_root, "docs", "09-backend.md")).read()
    for code in EXIT_CODES:
        assert f"| {code} |" in doc
