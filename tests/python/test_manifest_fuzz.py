"""The manifest reader fuzzed (docs/10-bad-inputs.md): manifest.json is read by Python
(fact.runtime.load), so instead of a libFuzzer target it gets a seeded mutation run here.
Each mutation of a valid artifact's manifest (a member removed, or replaced by a value of
another type or an out-of-range number, at every depth) must either load into a module that
computes what the model computes, or be refused with fact.runtime.ArtifactError naming what
is wrong. Any other exception is a finding."""

from __future__ import annotations

import copy
import json
import os
import random

import torch

import fact.runtime
from artifacts import linear_stub_artifact
from fact.runtime import ArtifactError


# Values a member is replaced by: each of another type than most members hold, or a number
# out of any range the reader accepts.
_REPLACEMENTS = [None, "", "x", -1, 0, 2 ** 63, 1e308, float("nan"), True, [], {}, [None], {"k": 1}]
_MUTATIONS = 400


def _paths(doc, prefix=()):
    """Every (path, container) below ``doc``: the key or index path of each member."""
    items = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(doc, list) else ()
    for k, v in items:
        yield prefix + (k,)
        yield from _paths(v, prefix + (k,))


def _mutate(doc: dict, rng: random.Random) -> tuple[dict, str]:
    out = copy.deepcopy(doc)
    path = rng.choice(list(_paths(out)))
    parent = out
    for k in path[:-1]:
        parent = parent[k]
    if rng.random() < 0.3 and isinstance(parent, dict):
        del parent[path[-1]]
        return out, f"removed {'/'.join(map(str, path))}"
    value = rng.choice(_REPLACEMENTS)
    parent[path[-1]] = copy.deepcopy(value)
    return out, f"{'/'.join(map(str, path))} = {value!r}"


def test_every_mutated_manifest_loads_right_or_is_refused_with_a_clear_error(tmp_path, build_c_library):
    art, model, x = linear_stub_artifact(tmp_path, build_c_library)
    manifest_path = os.path.join(art, "manifest.json")
    valid = json.loads(open(manifest_path).read())
    expected = model(x)
    assert torch.allclose(fact.runtime.load(art)(x), expected)  # the unmutated artifact loads

    rng = random.Random(0)
    refused = loaded = 0
    findings = []
    for _ in range(_MUTATIONS):
        doc, what = _mutate(valid, rng)
        with open(manifest_path, "w") as f:
            json.dump(doc, f)
        try:
            module = fact.runtime.load(art)
            # CPU tensors: every pattern falls back to ATen, so the result is the model's.
            got = module(x)
            if not torch.allclose(got, expected):
                findings.append(f"{what}: loads, but computes another result")
            loaded += 1
        except ArtifactError as e:
            assert str(e), what
            refused += 1
        except Exception as e:  # noqa: BLE001 - any other exception is what this test finds
            findings.append(f"{what}: {type(e).__name__}: {e}")
    assert not findings, "\n".join(findings[:20]) + f"\n({len(findings)} findings)"
    # The run exercised both answers.
    assert refused > 20 and loaded > 20, (refused, loaded)


def test_a_pattern_marked_for_the_module_level_aten_check_loads(tmp_path, build_c_library):
    """realize marks attention, norm and rope patterns ``"aten_check": "module"`` (the loaded
    module times the kernel against its ATen nodes): such a manifest loads; any other value
    is refused naming the member."""
    art, model, x = linear_stub_artifact(tmp_path, build_c_library)
    manifest_path = os.path.join(art, "manifest.json")
    doc = json.loads(open(manifest_path).read())
    doc["patterns"][0]["aten_check"] = "module"
    with open(manifest_path, "w") as f:
        json.dump(doc, f)
    assert torch.allclose(fact.runtime.load(art)(x), model(x))
    doc["patterns"][0]["aten_check"] = {"k": 1}
    with open(manifest_path, "w") as f:
        json.dump(doc, f)
    try:
        fact.runtime.load(art)
        raise AssertionError("an aten_check other than 'module' loaded")
    except ArtifactError as e:
        assert "patterns[0].aten_check: expected \"module\"" in str(e), str(e)
