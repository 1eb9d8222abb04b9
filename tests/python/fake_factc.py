"""A stand-in for the engine's CLI, for testing the Python pipeline without it.

discover: one gemm pattern per mm/matmul/linear/bmm node; every other node is a fallback
("no rule matches"); a graph's symbols go into the plan (version 2). realize: "gpu" null unless $FAKE_FACTC_GPU is set, in which case the
vendor candidate wins (compute capability $FAKE_FACTC_CC, default 9.0); it prints factc's
progress lines (kernels planned, each one built, each pattern tuned), and with a GPU keeps
a registry, <cache>/fake-registry.json (cache: --cache, else $FACT_CACHE_DIR, else none),
keyed by policy and pattern nodes: a pattern found there is "registry": "hit (tuned ...)" and prints factc's registry-hit line.
compose: an all-vendor artifact, or, when $FAKE_FACTC_PATTERNS names a JSON file, exactly
the manifest patterns it lists, with $FAKE_FACTC_LIBRARY copied as libfact_kernels.so.
When $FAKE_FACTC_LOG names a file, every command line is appended to it. Usage mirrors
factc: discover G -o P --policy X; realize P --policy X -o R [--cache C] [--tune-budget N];
compose P R --graph G -o DIR.
"""

import json
import os
import shutil
import sys

GEMM_OPS = {"aten.mm.default", "aten.bmm.default", "aten.matmul.default",
            "aten.linear.default", "aten.addmm.default"}


def _opt(args, name):
    return args[args.index(name) + 1]


def _registry(args):
    cache = _opt(args, "--cache") if "--cache" in args else os.environ.get("FACT_CACHE_DIR")
    return os.path.join(cache, "fake-registry.json") if cache else None


def _realize(args):
    plan = json.load(open(args[0]))
    gpu = os.environ.get("FAKE_FACTC_GPU")
    policy = _opt(args, "--policy")
    reg_path = _registry(args) if gpu and "--no-registry" not in args else None
    registry = json.load(open(reg_path)) if reg_path and os.path.isfile(reg_path) else {}
    n = len(plan["patterns"])
    print(f"realize: {n} kernels for {n} patterns, 1 nvcc jobs, cache fake", file=sys.stderr)
    for i, p in enumerate(plan["patterns"]):  # factc builds everything, then tunes
        print(f"[{i + 1}/{n}] built cutlass3x_fake_{p['id']} (1.0 s)", file=sys.stderr)
    pats = []
    for p in plan["patterns"]:
        name = f"cutlass3x_fake_{p['id']}"
        cands = [{"kernel": name, "impl": "cutlass", "status": "ok" if gpu else "built"}]
        entry = {"id": p["id"], "compile_s": 1.0, "candidates": cands,
                 "winner": "cublas_fake" if gpu else None}
        if gpu:
            cands.append({"kernel": "cublas_fake", "impl": "vendor", "status": "ok",
                          "median_ms": 1.0})
            key = f"{policy}:{','.join(p['nodes'])}"
            if key in registry:
                entry.update(registry="hit (tuned 2026-01-01)", tune_s=0)
                print(f"realize {p['id']}: registry hit, winner cublas_fake (tuned "
                      f"2026-01-01)", file=sys.stderr)
            else:
                print(f"realize {p['id']}: verifying and tuning 2 candidates", file=sys.stderr)
                print(f"realize {p['id']}: winner cublas_fake 1.0000 ms", file=sys.stderr)
                registry[key] = "cublas_fake"
        pats.append(entry)
    if reg_path:
        os.makedirs(os.path.dirname(reg_path), exist_ok=True)
        json.dump(registry, open(reg_path, "w"))
    realized = {"format": "fact.realized", "version": 1, "policy": policy,
                "gpu": gpu or None,
                "cc": os.environ.get("FAKE_FACTC_CC", "9.0") if gpu else None,
                "cuda_runtime": "13.0" if gpu else None, "cutlass": "4.2.0",
                "cache": _opt(args, "--cache") if "--cache" in args else "/tmp/fake-cache",
                "patterns": pats}
    json.dump(realized, open(_opt(args, "-o"), "w"))


def main(argv):
    if os.environ.get("FAKE_FACTC_LOG"):
        with open(os.environ["FAKE_FACTC_LOG"], "a") as log:
            log.write(" ".join(argv) + "\n")
    cmd, args = argv[0], argv[1:]
    if cmd == "discover":
        graph = json.load(open(args[0]))
        gemms = [x for x in graph["nodes"] if x["op"] in GEMM_OPS]
        patterns = [{"id": f"p{i}", "rule": "gemm", "priority": i, "nodes": [n["name"]],
                     "output": n["name"],
                     "operands": {"a": n["args"][0]["ref"], "b": n["args"][1]["ref"]},
                     "problem": {"kind": "gemm"}, "estimate": {}, "vetted_example": None}
                    for i, n in enumerate(gemms)]
        fallback = [{"node": x["name"], "op": x["op"], "reason": "no rule matches"}
                    for x in graph["nodes"] if x["op"] not in GEMM_OPS]
        plan = {"format": "fact.plan", "version": 1, "graph": graph["name"],
                "patterns": patterns, "rejected": [], "fallback": fallback}
        if graph.get("symbols"):  # a graph with symbols: a plan of version 2 carries them
            plan.update(version=2, symbols=graph["symbols"])
        json.dump(plan, open(_opt(args, "-o"), "w"))
    elif cmd == "realize":
        _realize(args)
    elif cmd == "compose":
        plan, realized = json.load(open(args[0])), json.load(open(args[1]))
        if realized["gpu"] is None:
            print("realized.json holds no verified kernels", file=sys.stderr)
            return 1
        out = _opt(args, "-o")
        os.makedirs(out, exist_ok=True)
        shutil.copy(_opt(args, "--graph"), os.path.join(out, "graph.json"))
        pats = [dict(p, impl="vendor", kernel="cublas_fake", symbol=None, workspace_bytes=0,
                     verified=True) for p in plan["patterns"]]
        library = None
        if os.environ.get("FAKE_FACTC_PATTERNS"):
            pats = json.load(open(os.environ["FAKE_FACTC_PATTERNS"]))
            library = "libfact_kernels.so"
            shutil.copy(os.environ["FAKE_FACTC_LIBRARY"], os.path.join(out, library))
        manifest = {"format": "fact.manifest", "version": 1, "policy": realized["policy"],
                    "library": library, "graph": "graph.json", "patterns": pats}
        json.dump(manifest, open(os.path.join(out, "manifest.json"), "w"))
    else:
        print(f"fake factc: unknown command {cmd}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
