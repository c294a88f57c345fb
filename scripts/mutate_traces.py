#!/usr/bin/env python3
"""Hostile-input run: mutated copies of the reference traces through the trace commands.

    scripts/mutate_traces.py --kiln build/app/kiln-cli --count 2000 --seed 1 [--reference DIR]

Each case copies one reference TORCH_TRACE log, applies one to five random
mutations (flipped and inserted bytes, bytes that are not UTF-8, ESC and BEL,
a lone surrogate escape, deleted, duplicated and truncated spans), then runs
`trace summary`, `trace summary --json` (which must print valid JSON), `trace
graph` of the first compile id, `trace summary` twice through a fresh
workspace, `trace ranks` (text and JSON) on a folder holding the mutated log
as rank 1 beside the unmutated one as rank 0, `trace report`, `trace
timeline` and `trace provenance` of the first compile id. A signal, an exit code other than 0, 1 or 3, invalid JSON or a
control character in text output is a finding: the case is kept and printed.
The last line is `N cases, M findings`; the exit code is 1 when M > 0.
Point --kiln at a copy of the binary when building meanwhile: a relink under a
running case ends the run.
"""
import argparse
import json
import os
import pathlib
import random
import shutil
import subprocess
import sys
import tempfile

INSERTS = [b"\xff", b"\xc3", b"\xed\xb3\xbf", b"\x1b[2J", b"\x07", b"\\udcff", b"\\u001b", b"\x00", b"\n", b"{", b"}", b'"',
           b"\xe2\x80", b"9" * 30, b"-1", b"\t"]


# Bytes a terminal acts on; text output must carry none of them.
CONTROL = set(range(0, 32)) - {9, 10} | {127}


def mutate(data, rng):
    data = bytearray(data)
    for _ in range(rng.randint(1, 5)):
        if not data:
            break
        kind = rng.randrange(6)
        at = rng.randrange(len(data))
        if kind == 0:
            data[at] ^= 1 << rng.randrange(8)
        elif kind == 1:
            data[at:at] = rng.choice(INSERTS)
        elif kind == 2:
            del data[at:at + rng.randint(1, 200)]
        elif kind == 3:
            end = min(len(data), at + rng.randint(1, 2000))
            data[end:end] = data[at:end]
        elif kind == 4:
            del data[at:]
        else:
            # Inside a JSON string: a name or text field's value.
            q = data.find(b'"', at)
            if q >= 0:
                data[q + 1:q + 1] = rng.choice(INSERTS)
    return bytes(data)


def run(cmd):
    try:
        r = subprocess.run(cmd, capture_output=True, timeout=120)
        return r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired:
        return "timeout", b"", b""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln", default="build/app/kiln-cli")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--reference", default=os.environ.get("KILN_REFERENCE_DIR", "../shared/reference"))
    ap.add_argument("--keep", default="mutated-findings")
    args = ap.parse_args()
    logs = sorted(pathlib.Path(args.reference, "traces").glob("*/*.log"))
    if not logs:
        sys.exit("no reference traces under " + args.reference)
    sources = [(p, p.read_bytes()) for p in logs]
    findings = 0
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="kiln-mutate-"))
    for case in range(args.count):
        rng = random.Random(args.seed * 1000003 + case)
        path, data = rng.choice(sources)
        log = tmp / "dedicated_log_torch_trace_case.log"
        log.write_bytes(mutate(data, rng))
        ranks = tmp / "ranks"
        shutil.rmtree(ranks, ignore_errors=True)
        ranks.mkdir()
        (ranks / "dedicated_log_torch_trace_rank_0.log").write_bytes(data)
        shutil.copy(log, ranks / "dedicated_log_torch_trace_rank_1.log")
        ws = tmp / "ws.kiln"
        if ws.exists():
            ws.unlink()
        problems = []
        for cmd in (["trace", "summary", str(log)], ["trace", "summary", str(log), "--json"],
                    ["trace", "graph", str(log), "--compile-id", "0/0", "--stage", "dynamo_output_graph"],
                    ["trace", "summary", str(log), "--workspace", str(ws)], ["trace", "summary", str(log), "--workspace", str(ws)],
                    ["trace", "ranks", str(ranks)], ["trace", "ranks", str(ranks), "--json"],
                    ["trace", "report", str(log), "--out", str(tmp / "report"), "--overwrite"],
                    ["trace", "timeline", str(log), "--out", str(tmp / "timeline.json")],
                    ["trace", "provenance", str(log), "--compile-id", "0/0"]):
            rc, out, err = run([args.kiln] + cmd)
            if rc not in (0, 1, 3):
                problems.append("%s: exit %s %s" % (" ".join(cmd[:2] + cmd[3:]), rc, err[-300:]))
                continue
            if "--json" in cmd and rc == 0:
                try:
                    json.loads(out)
                except ValueError as e:
                    problems.append("%s --json: invalid JSON: %s" % (cmd[1], e))
            elif any(c in CONTROL for c in out + err):
                problems.append("%s: a control character reached the output" % " ".join(cmd[:2]))
        if problems:
            findings += 1
            keep = pathlib.Path(args.keep)
            keep.mkdir(parents=True, exist_ok=True)
            kept = keep / ("case%d_%s" % (case, path.name))
            shutil.copy(log, kept)
            print("FINDING case %d (%s from %s):" % (case, kept, path.parent.name))
            for p in problems:
                print("  " + p)
            sys.stdout.flush()
    shutil.rmtree(tmp, ignore_errors=True)
    print("%d cases, %d findings" % (args.count, findings))
    sys.exit(1 if findings else 0)


if __name__ == "__main__":
    main()
