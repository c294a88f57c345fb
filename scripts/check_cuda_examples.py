#!/usr/bin/env python3
"""The examples that use device("cuda"), on the GPU and on the CPU path, compared.

Runs every program in resources/examples/ that mentions "cuda" through
`kiln-cli run` twice: as it is (on a GPU machine its compiled regions run on
the GPU) and with CUDA_VISIBLE_DEVICES= (no device: the CPU path), then
compares what they print line by line: words must match, numbers must agree to
1e-4 relative (1e-2 on lines whose first word names half precision: half,
float16, bfloat16, bf16), with 1e-6 absolute slack for values near zero.
With --torch, PyTorch's own run of each program (on the GPU) is compared too.

    python3 scripts/check_cuda_examples.py --kiln build/app/kiln-cli [--torch]

Exit status 1 when any line disagrees. Run it from the repository root.
"""
import argparse
import glob
import os
import re
import subprocess
import sys

NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
HALF = ("half", "float16", "bfloat16", "bf16")


def words(line):
    return re.findall(r"[-+]?\d*\.?\d+(?:[eE][-+]?\d+)?|[A-Za-z_]+|\S", line)


def disagreement(a, b):
    """None when two printed lines agree, else why not."""
    wa, wb = words(a), words(b)
    if len(wa) != len(wb):
        return "different words"
    rtol = 1e-2 if wa and any(h in wa[0] for h in HALF) else 1e-4
    for x, y in zip(wa, wb):
        if NUMBER.match(x) and NUMBER.match(y):
            fx, fy = float(x), float(y)
            if abs(fx - fy) > 1e-6 + rtol * max(abs(fx), abs(fy)):
                return "%s vs %s (rtol %g)" % (x, y, rtol)
        elif x != y:
            return "%r vs %r" % (x, y)
    return None


def run(cmd, env_extra=None):
    env = dict(os.environ)
    env.update(env_extra or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    return p.returncode, p.stdout, p.stderr


def compare(name, label, got, want):
    bad = 0
    gl, wl = got.splitlines(), want.splitlines()
    if len(gl) != len(wl):
        print("  %s: %d lines, CPU path %d" % (label, len(gl), len(wl)))
        return 1
    for i, (g, w) in enumerate(zip(gl, wl)):
        why = disagreement(g, w)
        if why:
            bad += 1
            print("  %s line %d: %s\n    got: %s\n    cpu: %s" % (label, i + 1, why, g, w))
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True)
    ap.add_argument("--torch", action="store_true", help="also compare PyTorch's run of each program")
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    programs = [p for p in sorted(glob.glob("resources/examples/*.py")) if "cuda" in open(p).read()]
    if not programs:
        sys.exit("check_cuda_examples.py: no example mentions cuda (run from the repository root)")
    failed = 0
    for p in programs:
        name = os.path.basename(p)
        rc_gpu, gpu, err_gpu = run([args.kiln, "run", p])
        rc_cpu, cpu, err_cpu = run([args.kiln, "run", p], {"CUDA_VISIBLE_DEVICES": ""})
        if rc_gpu or rc_cpu:
            print("%s: exit %d on the GPU, %d on the CPU path\n%s%s" % (name, rc_gpu, rc_cpu, err_gpu, err_cpu))
            failed += 1
            continue
        warnings = [l for l in err_gpu.splitlines() if l.startswith("W kiln")]
        bad = compare(name, "kiln gpu", gpu, cpu)
        if args.torch:
            rc_t, torch_out, err_t = run([args.python, p])
            bad += compare(name, "pytorch gpu", torch_out, cpu) if rc_t == 0 else 1
            if rc_t:
                print("  pytorch exit %d: %s" % (rc_t, err_t[-2000:]))
        print("%s: %d lines, %s%s" % (name, len(cpu.splitlines()), "agree" if not bad else "%d disagree" % bad,
                                     "; warnings: " + " | ".join(warnings) if warnings else ""))
        failed += bool(bad)
    print("%d of %d programs agree" % (len(programs) - failed, len(programs)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
