"""factc's flags are checked before any work starts, each error naming the flag (src/cli/)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
FACTC = pathlib.Path(os.environ.get("FACT_FACTC", ROOT / "build" / "factc")).resolve()

pytestmark = pytest.mark.skipif(not FACTC.exists(), reason=f"factc not built at {FACTC}")


def factc(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(FACTC), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture
def empty_plan(tmp_path: pathlib.Path) -> pathlib.Path:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"format": "fact.plan", "version": 1, "graph": "g", "patterns": []}))
    return plan


def test_an_empty_plan_realizes(empty_plan, tmp_path):
    r = factc("realize", str(empty_plan), "--no-gpu", "--cache", str(tmp_path / "c"),
              "-o", str(tmp_path / "r.json"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "r.json").read_text())["patterns"] == []


@pytest.mark.parametrize("flag", ["--tune-budget", "--jobs"])
def test_a_negative_count_is_refused_naming_the_flag(flag, empty_plan, tmp_path):
    r = factc("realize", str(empty_plan), "--no-gpu", "--cache", str(tmp_path / "c"), flag, "-1", cwd=tmp_path)
    assert r.returncode != 0
    assert flag in r.stderr, r.stderr
    assert not (tmp_path / "realized.json").exists()


def test_a_cache_that_is_a_file_is_refused_and_kept(empty_plan, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("mine")
    r = factc("realize", str(empty_plan), "--no-gpu", "--cache", str(afile), cwd=tmp_path)
    assert r.returncode != 0
    assert "--cache" in r.stderr and "not a directory" in r.stderr, r.stderr
    assert afile.read_text() == "mine"


def test_many_jobs_do_not_abort(empty_plan, tmp_path):
    r = factc("realize", str(empty_plan), "--no-gpu", "--cache", str(tmp_path / "c"), "--jobs", "100000",
              "-o", str(tmp_path / "r.json"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr


def test_a_registry_directory_is_never_renamed(tmp_path):
    cache = tmp_path / "cache"
    (cache / "kernels").mkdir(parents=True)
    (cache / "kernels" / "keep").write_text("user data")
    r = factc("registry", "--db", str(cache), "list", cwd=tmp_path)
    assert r.returncode != 0
    assert "is a directory" in r.stderr, r.stderr
    assert (cache / "kernels" / "keep").read_text() == "user data"
    assert not (tmp_path / "cache.corrupt").exists()


def test_the_plans_precision_is_the_default_policy_and_another_is_said(tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"format": "fact.plan", "version": 1, "graph": "g", "precision": "fp32",
                                "patterns": []}))
    r = factc("realize", str(plan), "--no-gpu", "--cache", str(tmp_path / "c"), "-o", str(tmp_path / "a.json"),
              cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "a.json").read_text())["policy"] == "fp32"
    assert "differs" not in r.stderr
    r = factc("realize", str(plan), "--no-gpu", "--policy", "tf32", "--cache", str(tmp_path / "c"),
              "-o", str(tmp_path / "b.json"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "b.json").read_text())["policy"] == "tf32"
    assert "--policy tf32 differs from the plan's precision fp32" in r.stderr


def test_a_plan_with_a_key_twice_is_refused_naming_the_key(tmp_path):
    # The last of two "precision"s was once taken silently (nlohmann's default).
    plan = tmp_path / "plan.json"
    plan.write_text('{"format": "fact.plan", "version": 1, "precision": "fp32", "precision": "tf32", '
                    '"patterns": []}')
    r = factc("realize", str(plan), "--no-gpu", "--cache", str(tmp_path / "c"), "-o", str(tmp_path / "r.json"),
              cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert 'duplicate key "precision"' in r.stderr and str(plan) in r.stderr, r.stderr
    assert not (tmp_path / "r.json").exists()
