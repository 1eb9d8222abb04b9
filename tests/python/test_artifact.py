"""Artifacts that travel (python/fact/artifact.py, fact/environment.py): saved, reloaded in
a fresh process without factc, and reloaded where the GPU differs — said, and rebuilt from
the plan, or run as ATen; a kernel library is never opened for another GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn as nn

import fact
import fact.environment
from artifacts import linear_stub_artifact
from fact.log import FactWarning

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

H200 = {"format": "fact.environment", "version": 1, "gpu": "NVIDIA H200", "cc": "9.0",
        "sm_count": 132, "driver": "13.0", "cuda_runtime": "13.0", "nvcc": "13.0.88",
        "cutlass": "4.2.0", "torch": "2.11.0+cu130", "torch_cuda": "13.0", "fact": "0.1.0",
        "fact_commit": "abc1234", "policy": "fp32", "tune_budget": 2}
A100_HERE = {"gpu": "NVIDIA A100-SXM4-80GB", "cc": "8.0", "driver": "13.0"}
H200_HERE = {"gpu": "NVIDIA H200", "cc": "9.0", "driver": "13.0"}


@pytest.fixture
def artifact(tmp_path, build_c_library, fake_factc) -> tuple[str, nn.Module, torch.Tensor]:
    """An artifact of one CUTLASS pattern (a stand-in library) built on an H200: graph,
    manifest, library, params.pt, environment.json and the plan (from the stand-in
    engine's discover, so that a rebuild has something to realize). Returns (path, model,
    an input)."""
    art, model, x = linear_stub_artifact(tmp_path, build_c_library)
    fact.environment.write_environment(art, H200)
    subprocess.run([fake_factc, "discover", os.path.join(art, "graph.json"), "-o",
                    os.path.join(art, "plan.json"), "--policy", "fp32"], check=True)
    return art, model, x


def _here(monkeypatch, env: dict | None) -> None:
    """This machine's environment, as fact.environment.current_environment says it."""
    here = {"gpu": None, "cc": None, "driver": None} if env is None else env
    monkeypatch.setattr(fact.environment, "current_environment", lambda: dict(here))
    monkeypatch.setattr(fact.log, "_said", set())


def _load(path, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = fact.load(path, **kw)
    return module, [str(w.message) for w in caught if issubclass(w.category, FactWarning)]


_FRESH = """
import json, sys, torch
sys.path.insert(0, {python!r})
import fact, fact.environment
env = json.load(open(sys.argv[1] + "/environment.json"))
fact.environment.current_environment = lambda: dict(env)  # the GPU it was built on
module = fact.load(sys.argv[1])
x = torch.load(sys.argv[2])
print(json.dumps({{"kernel": module.bindings["p0"].functions.name(),
                   "equal": bool(torch.equal(module(x), torch.load(sys.argv[3])))}}))
"""


def test_a_saved_artifact_reloads_in_a_fresh_process_without_factc(tmp_path, artifact,
                                                                   monkeypatch) -> None:
    art, model, x = artifact
    _here(monkeypatch, H200_HERE)
    module, said = _load(art)
    assert said == [] and module.bindings["p0"].functions.name() == "stub_gemm_sm90a"
    with torch.no_grad():
        model[0].bias += 1.0  # the saved copy carries the module's tensors as they are now
        module.p_0_bias.copy_(model[0].bias)
    saved = module.save(tmp_path / "saved")
    assert sorted(os.listdir(saved)) == ["environment.json", "graph.json", "libfact_kernels.so",
                                         "manifest.json", "module.py", "params.pt", "plan.json"]
    assert (tmp_path / "saved" / "module.py").read_text() == module.source()
    torch.save(x, tmp_path / "x.pt")
    torch.save(model(x).detach(), tmp_path / "want.pt")
    log = tmp_path / "factc.log"
    script = tmp_path / "fresh.py"
    script.write_text(_FRESH.format(python=os.path.join(ROOT, "python")))
    env = dict(os.environ, FAKE_FACTC_LOG=str(log), PYTHONPATH=os.path.join(ROOT, "python"))
    proc = subprocess.run([sys.executable, str(script), saved, str(tmp_path / "x.pt"),
                           str(tmp_path / "want.pt")], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[-1]) == {"kernel": "stub_gemm_sm90a",
                                                        "equal": True}
    assert not log.exists()  # no factc call


def test_another_gpu_is_said_and_the_artifact_rebuilt_for_this_one(tmp_path, artifact,
                                                                   monkeypatch) -> None:
    art, model, x = artifact
    log = tmp_path / "factc.log"
    monkeypatch.setenv("FAKE_FACTC_LOG", str(log))
    monkeypatch.setenv("FAKE_FACTC_GPU", "NVIDIA A100-SXM4-80GB")
    monkeypatch.setenv("FAKE_FACTC_CC", "8.0")
    monkeypatch.setenv("FACT_CACHE_DIR", str(tmp_path / "cache"))
    _here(monkeypatch, A100_HERE)
    module, said = _load(art)
    rebuilt = module.artifact_dir
    assert rebuilt.startswith(str(tmp_path / "cache" / "rebuilt"))
    assert said == [f"fact: {art} was built for NVIDIA H200 (cc 9.0), CUDA 13.0; this machine "
                    f"has NVIDIA A100-SXM4-80GB (cc 8.0), CUDA 13.0 (gpu: NVIDIA H200 there, "
                    f"NVIDIA A100-SXM4-80GB here; cc: 9.0 there, 8.0 here): rebuilt its "
                    f"kernels for this GPU from its plan, the tuning registry and the kernel cache: {rebuilt}"]
    # Realized and composed again with the recorded policy and budget; the stand-in's
    # winner here is the vendor path, so no kernel built for the H200 is bound.
    assert log.read_text().splitlines()[0].startswith(f"realize {art}/plan.json --policy fp32")
    assert "--tune-budget 2" in log.read_text()
    assert [line.split()[0] for line in log.read_text().splitlines()] == ["realize", "compose"]
    assert module.bindings == {}
    assert json.loads(open(os.path.join(rebuilt, "environment.json")).read())["gpu"] == \
        "NVIDIA A100-SXM4-80GB"
    assert torch.equal(module(x), model(x))
    # Loading again finds the rebuild: factc is not run again.
    again, _ = _load(art)
    assert again.artifact_dir == rebuilt and len(log.read_text().splitlines()) == 2


def test_without_a_gpu_the_kernels_stay_off_and_the_library_closed(tmp_path, artifact,
                                                                   monkeypatch) -> None:
    art, model, x = artifact
    with open(os.path.join(art, "libfact_kernels.so"), "wb") as f:
        f.write(b"not a library")  # opening it would fail
    log = tmp_path / "factc.log"
    monkeypatch.setenv("FAKE_FACTC_LOG", str(log))
    _here(monkeypatch, None)
    module, said = _load(art)
    reason = (f"fact: {art} was built for NVIDIA H200 (cc 9.0), CUDA 13.0; this machine has no "
              f"GPU (gpu: NVIDIA H200 there, none here; cc: 9.0 there, none here); without a "
              f"GPU its kernels cannot run")
    assert said == [reason + ": every node runs as its ATen op"]
    assert module.bindings == {}
    (entry,) = module.manifest["patterns"]
    assert (entry["impl"], entry["aten_reason"]) == ("aten", reason)
    assert torch.equal(module(x), model(x))
    assert not log.exists()


def test_a_rebuild_that_cannot_run_leaves_the_aten_path(tmp_path, artifact,
                                                        monkeypatch) -> None:
    art, model, x = artifact
    monkeypatch.setenv("FACT_FACTC", str(tmp_path / "no-factc"))
    monkeypatch.setenv("FACT_CACHE_DIR", str(tmp_path / "cache"))
    _here(monkeypatch, A100_HERE)
    module, (said,) = _load(art)
    assert "; rebuilding failed: factc named by FACT_FACTC" in said
    assert said.endswith(": every node runs as its ATen op")
    assert module.bindings == {} and torch.equal(module(x), model(x))
    assert _load(art)[1] == []  # said once per process
    monkeypatch.setattr(fact.log, "_said", set())
    off, (said_off,) = _load(art, rebuild=False)
    assert "; rebuilding is off: every node runs as its ATen op" in said_off
    assert off.bindings == {}


def test_a_library_that_cannot_be_opened_is_the_aten_path(tmp_path, artifact,
                                                          monkeypatch) -> None:
    art, model, x = artifact
    with open(os.path.join(art, "libfact_kernels.so"), "wb") as f:
        f.write(b"not a library")
    _here(monkeypatch, H200_HERE)
    module, (said,) = _load(art)
    assert said.startswith(f"fact: the kernel library of {art} cannot be loaded here: ")
    assert module.bindings == {} and torch.equal(module(x), model(x))


def test_mismatches_compare_the_gpu_and_the_drivers_support() -> None:
    from fact.environment import mismatches
    here = {"gpu": "NVIDIA H200", "cc": "9.0", "driver": "13.1", "torch": "other"}
    assert mismatches(H200, here) == {}
    assert mismatches(H200, dict(here, driver="12.8")) == {"driver": (">= 13.0", "12.8")}
    assert mismatches(H200, dict(here, driver=None)) == {}  # cannot tell: not held against it
    assert mismatches(H200, dict(here, cc="9.0", gpu="NVIDIA H100 80GB HBM3")) == {
        "gpu": ("NVIDIA H200", "NVIDIA H100 80GB HBM3")}
    assert mismatches({"gpu": None, "cc": "9.0"}, {"gpu": "X", "cc": "9.0"}) == {}


def test_a_saved_composition_is_applied_at_load(tmp_path, build_c_library) -> None:
    from fact.artifact import COMPOSITION_FILE, load_artifact, write_composition
    from fact.runtime import load
    art, model, x = linear_stub_artifact(tmp_path, build_c_library)
    composed = load(art, model).handing_back(["p0"], "handed back to Inductor: slower")
    composed.set_remainder("inductor")
    write_composition(art, composed, {"choice": "fact"})
    doc = json.loads(open(os.path.join(art, COMPOSITION_FILE)).read())
    assert doc == {"format": "fact.composition", "version": 1, "remainder": "inductor",
                   "handed_back": {"p0": "handed back to Inductor: slower"},
                   "composition": {"choice": "fact"}}
    loaded = load_artifact(art, model)
    assert loaded.remainder.mode == "inductor" and loaded.bindings == {}
    assert loaded.manifest["patterns"][0]["aten_reason"] == "handed back to Inductor: slower"
    assert torch.allclose(loaded(x), model(x), rtol=1e-5, atol=1e-6)


def test_an_unreadable_composition_loads_every_kernel_with_a_warning(tmp_path,
                                                                      build_c_library) -> None:
    from fact.artifact import COMPOSITION_FILE, load_artifact
    art, model, x = linear_stub_artifact(tmp_path, build_c_library)
    with open(os.path.join(art, COMPOSITION_FILE), "w") as f:
        f.write('{"format": "fact.composition", "remainder": "triton", "handed_back": {}}')
    with pytest.warns(FactWarning, match="composition.json is unreadable"):
        loaded = load_artifact(art, model)
    assert loaded.remainder.mode == "aten" and list(loaded.bindings) == ["p0"]
