"""The ``fact`` command on CPU, with a stand-in engine (tests/python/fake_factc.py)."""

from __future__ import annotations

import json
import os
import sys

import pytest
import torch

from fact.cli import main
from fact.factc import FactcError, find_factc, run_factc

SMALL_PROBLEM = '''
"""A small linear + relu problem for tests."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n)

    def forward(self, x):
        return torch.relu(self.fc(x)) @ x.t()


def get_inputs():
    return [torch.randn(32, 64)]


def get_init_inputs():
    return [64]
'''


@pytest.fixture
def problem_file(tmp_path) -> str:
    path = tmp_path / "small_linear.py"
    path.write_text(SMALL_PROBLEM)
    return str(path)


@pytest.fixture(autouse=True)
def _restore_precision():
    before = torch.get_float32_matmul_precision()
    yield
    torch.set_float32_matmul_precision(before)


def test_problem_without_model_exits_2_with_message(tmp_path, capsys, fake_factc) -> None:
    path = tmp_path / "nomodel.py"
    path.write_text("def get_inputs():\n    return []\n\ndef get_init_inputs():\n"
                    "    return []\n")
    assert main(["optimize", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "missing Model" in err and str(path) in err


def test_no_gpu_stops_after_compiling_and_exits_3(tmp_path, capsys, fake_factc,
                                                 problem_file) -> None:
    out = tmp_path / "work"
    assert main(["optimize", problem_file, "--precision", "tf32", "--out", str(out)]) == 3
    captured = capsys.readouterr()
    assert captured.out.strip() == (
        "verification and tuning need a GPU: discovered 2 patterns, compiled 2 kernels "
        "(cache: /tmp/fake-cache); stopping\n"
        "next: run it where a CUDA GPU (sm_90a: H100/H200) is present, to verify the "
        "kernels against float64, tune them against the vendor library and compose the module\n"
        f"files: {out} (graph.json, plan.json, realized.json)")
    # What it did, step by step, on stderr (the fact logger), and no traceback.
    assert captured.err.splitlines() == [
        "fact: no GPU here (torch.cuda.is_available() is False): verifying the kernels against "
        "float64, tuning them against the vendor library and running the optimized module "
        "need a CUDA GPU (sm_90a: H100/H200)",
        "fact: small_linear: exporting the graph",
        "fact: small_linear: discovering patterns (4 nodes)",
        "fact: small_linear: realizing 2 patterns (budget all candidates)"]
    graph = json.loads((out / "graph.json").read_text())
    assert [n["op"] for n in graph["nodes"]] == [
        "aten.linear.default", "aten.relu.default", "aten.t.default", "aten.matmul.default"]
    assert json.loads((out / "realized.json").read_text())["policy"] == "tf32"
    assert not (out / "artifact").exists()


def test_full_pipeline_with_vendor_artifact_on_cpu(tmp_path, capsys, fake_factc,
                                                  problem_file, monkeypatch) -> None:
    monkeypatch.setenv("FAKE_FACTC_GPU", "Fake GPU")
    out, result = tmp_path / "work", tmp_path / "res" / "bench.json"
    rc = main(["optimize", problem_file, "--precision", "fp32", "--out", str(out),
               "--json", str(result), "--problem-name", "small"])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert "small" in text and "fp32" in text and "cublas_fake" in text
    doc = json.loads(result.read_text())
    assert doc["command"].startswith("fact optimize ")
    assert set(doc["machine"]) == {"gpu", "driver", "torch", "cuda", "cutlass", "fact_commit"}
    assert doc["machine"]["cutlass"] == "4.2.0"
    assert doc["machine"]["torch"] == torch.__version__
    (row,) = doc["rows"]
    assert row["problem"] == "small" and row["policy"] == "fp32"
    assert row["verified"] is True
    assert row["verified_on"] == ["own inputs"]  # randn inputs: an informative reference
    assert row["max_rel_err"] < 1e-5
    assert set(row["baselines_ms"]) == {"eager_fp32", "eager"}
    assert row["fact_ms"] > 0 and row["fact_spread_ms"][0] <= row["fact_ms"]
    assert row["kernels"] == ["cublas_fake", "cublas_fake"]
    assert row["fallbacks"] == 0
    md = result.with_suffix(".md").read_text()
    assert "| small | fp32 |" in md
    # params.pt lets the artifact load without the model.
    import fact
    module = fact.load(out / "artifact")
    assert module(torch.randn(32, 64)).shape == (32, 32)


def test_factc_lookup_and_failures(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FACT_FACTC", str(tmp_path / "nope"))
    with pytest.raises(FactcError, match="FACT_FACTC"):
        find_factc()
    script = tmp_path / "failing"
    script.write_text("#!/bin/sh\necho 'bad graph: node x' >&2\nexit 3\n")
    script.chmod(0o755)
    assert find_factc(str(script)) == str(script)
    with pytest.raises(FactcError, match=r"exit 3.*discover g\.json\nbad graph: node x"):
        run_factc(str(script), ["discover", "g.json"])


ALL_ZERO_PROBLEM = '''
"""Linear, (x - 2) * 1.5, relu on uniform inputs: the reference is all zeros."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 32)

    def forward(self, x):
        return torch.relu((self.fc(x) - 2.0) * 1.5)


def get_inputs():
    return [torch.rand(64, 16)]


def get_init_inputs():
    return []
'''


def test_uninformative_reference_is_verified_on_drawn_inputs(tmp_path, capsys, fake_factc,
                                                             monkeypatch) -> None:
    monkeypatch.setenv("FAKE_FACTC_GPU", "Fake GPU")
    problem = tmp_path / "all_zero.py"
    problem.write_text(ALL_ZERO_PROBLEM)
    result = tmp_path / "bench.json"
    rc = main(["optimize", str(problem), "--precision", "fp32", "--out", str(tmp_path / "w"),
               "--json", str(result)])
    assert rc == 0, capsys.readouterr().out
    (row,) = json.loads(result.read_text())["rows"]
    assert row["verified"] is True
    assert row["verified_on"] and row["verified_on"][0].startswith("randn x")
    assert "Verified on drawn inputs" in result.with_suffix(".md").read_text()


@pytest.mark.parametrize("flag,value,message", [
    ("--out", "afile/sub", "is a file, not a directory"),
    ("--cache", "afile", "is a file, not a directory"),
    ("--tune-budget", "-1", "must be at least 0"),
    ("--jobs", "0", "must be at least 1"),
    ("--trials", "5", "must be at least 20"),
])
def test_a_bad_flag_exits_2_naming_it_before_any_work(flag, value, message, tmp_path, capsys,
                                                       problem_file, fake_factc) -> None:
    afile = tmp_path / "afile"
    afile.write_text("mine")
    arg = str(tmp_path / value) if flag in ("--out", "--cache") else value
    with pytest.raises(SystemExit) as stop:
        main(["optimize", problem_file, flag, arg])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert flag in err and message in err, err
    assert afile.read_text() == "mine"
    assert not (tmp_path / "out").exists()


def test_a_new_out_directory_under_an_existing_one_is_accepted(tmp_path) -> None:
    from fact.cli import directory_arg
    assert directory_arg("--out")(str(tmp_path / "a" / "b")) == str(tmp_path / "a" / "b")
    assert not (tmp_path / "a").exists()


def test_a_module_that_fails_verification_exits_1(tmp_path, capsys, fake_factc, problem_file,
                                                   monkeypatch) -> None:
    import dataclasses
    import sys as _sys
    optimize_module = _sys.modules["fact.optimize"]
    real_verify = optimize_module.verify

    def failing(*args, **kwargs):  # what verify says of a kernel that computes garbage
        checks = real_verify(*args, **kwargs)
        checks["fact"] = dataclasses.replace(checks["fact"], ok=False,
                                             reason="max rel err 3.1e-01 > 1.0e-05")
        return checks

    monkeypatch.setattr(optimize_module, "verify", failing)
    monkeypatch.setenv("FAKE_FACTC_GPU", "Fake GPU")
    rc = main(["optimize", problem_file, "--precision", "fp32", "--out", str(tmp_path / "w")])
    out = capsys.readouterr().out
    assert rc == 1
    assert "verification FAILED: max rel err 3.1e-01 > 1.0e-05" in out
    assert "(not verified)" in out
