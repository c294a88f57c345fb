#!/usr/bin/env python3
"""Runs every program in this folder with real PyTorch and writes what it printed.

<p>.stdout is the plain eager run (torch.compile returns the function unchanged);
<p>.<backend>.stdout is written for a torch.compile backend only where its output
differs from the plain run. Run on a machine with PyTorch, from anywhere:

    python3 tests/data/regressions/generate.py [--out DIR] [--jobs N] [NAME ...]
"""
import argparse
import concurrent.futures
import os
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent

# Runs the program with torch.compile rewired: "none" makes it the identity,
# any other name forces that backend (mode and options dropped).
SHIM = r"""
import runpy, sys, torch
backend = sys.argv[1]
orig = torch.compile
def compile_shim(model=None, **kw):
    if backend == "none":
        return model if model is not None else (lambda m: m)
    kw["backend"] = backend
    kw.pop("mode", None); kw.pop("options", None)
    return orig(model, **kw) if model is not None else (lambda m: orig(m, **kw))
torch.compile = compile_shim
sys.argv = [sys.argv[2]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def run(program, backend):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONHASHSEED="0", CUDA_VISIBLE_DEVICES="")
    r = subprocess.run([sys.executable, "-c", SHIM, backend, str(program)], capture_output=True, text=True,
                       env=env, timeout=300)
    return r.stdout + ("" if r.returncode == 0 else "exit %d\n%s" % (r.returncode, r.stderr[-2000:]))


def one(program, out):
    plain = run(program, "none")
    (out / (program.stem + ".stdout")).write_text(plain)
    for backend in ("eager", "aot_eager"):
        got = run(program, backend)
        if got != plain:
            (out / (program.stem + "." + backend + ".stdout")).write_text(got)
    return program.stem


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(HERE))
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("names", nargs="*", help="program stems (default: every program here)")
    args = ap.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    import torch
    (out / "torch_version.txt").write_text(torch.__version__ + "\n")
    programs = [p for p in sorted(HERE.glob("*.py")) if p.name != "generate.py" and (not args.names or p.stem in args.names)]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for stem in pool.map(lambda p: one(p, out), programs):
            print(stem, "done", flush=True)


if __name__ == "__main__":
    main()
