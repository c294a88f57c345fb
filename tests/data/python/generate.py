#!/usr/bin/env python3
"""Regenerates the expected outputs of Kiln's example programs from real PyTorch.

Run it on a machine with PyTorch (the reference is 2.11.0) from the repository root:

    python3 tests/data/python/generate.py [--only e01,e04] [--out DIR]

Each program in resources/examples is copied to a neutral folder (--stage, default
/home/dev/models, the prefix the shared reference logs use) and run three times, in
parallel with the other programs:

  inductor  `python3 PROGRAM.py` exactly as a user runs it (default backend), with
            TORCH_LOGS=graph_breaks,recompiles: gives <name>.stdout, <name>.stderr.txt
            and <name>.recompiles.txt.
  eager     the same under a shim that turns the default backend into "eager": its
            stdout is compared with the inductor one (the numbers may differ a little).
  explain   under a shim that runs torch._dynamo.explain(fn)(*args) on every
            torch.compile'd callable at its first call (fresh Dynamo state, deep copies
            of the arguments and of a module) and then runs the callable eagerly.

Everything lands in <name>.explain.json together with the recompiles parsed from the
inductor run. The glog prefixes (time stamps, pids, source lines) are stripped from
stderr, PyTorch's install folder is written as /usr/lib/python3/site-packages and
object ids / addresses are replaced by ID / 0xADDR, so the files are comparable
between runs.
"""
import argparse
import concurrent.futures
import copy
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))

GLOG_PREFIX = re.compile(r"^([VIWEF])\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ [^\]]*\] ")
COMPILE_ID = re.compile(r"^\[(\d+/\d+(?:_\d+)?)\] ")
ADDRESS = re.compile(r"0x[0-9a-fA-F]{6,}")
LONG_ID = re.compile(r"(?<![\w.])\d{9,}(?![\w.])")
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def normalize(text, torch_site=None):
    if torch_site:
        text = text.replace(torch_site, "/usr/lib/python3/site-packages")
    text = ADDRESS.sub("0xADDR", text)
    return LONG_ID.sub("ID", text)


# ---------------------------------------------------------------- shim (child)

def describe(value):
    import torch
    if isinstance(value, torch.Tensor):
        extra = ", requires_grad" if value.requires_grad else ""
        return f"Tensor({str(value.dtype).replace('torch.', '')}, {list(value.shape)}, stride={list(value.stride())}{extra})"
    if isinstance(value, (list, tuple)):
        return [describe(v) for v in value]
    if isinstance(value, dict):
        return {str(k): describe(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return type(value).__name__


def snapshot(value):
    """A copy of call arguments that explain() may run on without touching the originals."""
    import torch
    if isinstance(value, torch.Tensor):
        copied = value.detach().clone()
        return copied.requires_grad_(value.requires_grad) if value.is_floating_point() else copied
    if isinstance(value, list):
        return [snapshot(v) for v in value]
    if isinstance(value, tuple):
        return tuple(snapshot(v) for v in value)
    if isinstance(value, dict):
        return {k: snapshot(v) for k, v in value.items()}
    return value


def qualified(target):
    import torch.fx.node
    if isinstance(target, str):
        return target
    try:
        return torch.fx.node._get_qualified_name(target)
    except Exception:
        return normalize(str(target))


def code_location(model):
    import torch
    fn = type(model).forward if isinstance(model, torch.nn.Module) else model
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    return {"co_name": code.co_name, "file": os.path.basename(code.co_filename), "line": code.co_firstlineno}


def explain_into(rec, model, args, kwargs, dynamic, torch_site):
    import torch
    import torch._dynamo
    target = model
    if isinstance(model, torch.nn.Module):
        try:
            target = copy.deepcopy(model)
        except Exception:
            target = model
    patches = {}
    if dynamic is True:
        patches = {"assume_static_by_default": False}
    elif dynamic is False:
        patches = {"automatic_dynamic_shapes": False, "assume_static_by_default": True}
    try:
        with torch._dynamo.config.patch(**patches):
            ex = torch._dynamo.explain(target)(*snapshot(args), **snapshot(kwargs))
    except Exception as e:  # recorded, the program goes on
        rec["error"] = normalize(f"{type(e).__name__}: {e}", torch_site).splitlines()[:3]
        return
    finally:
        torch._dynamo.reset()
    rec["graph_count"] = ex.graph_count
    rec["graph_break_count"] = ex.graph_break_count
    rec["op_count"] = ex.op_count
    reasons = []
    for r in ex.break_reasons:
        stack = [[os.path.basename(f.filename), f.lineno, f.name] for f in (r.user_stack or [])]
        text = normalize(str(r.reason), torch_site)
        reasons.append({
            "reason": text.strip().splitlines()[0] if text.strip() else "",
            "file": stack[-1][0] if stack else None,
            "line": stack[-1][1] if stack else None,
            "function": stack[-1][2] if stack else None,
            "stack": stack,
            "reason_full": text,
        })
    rec["break_reasons"] = reasons
    rec["ops_per_graph"] = [[normalize(str(op), torch_site) for op in ops] for ops in ex.ops_per_graph]
    rec["ops_per_graph_qualified"] = [[qualified(op) for op in ops] for ops in ex.ops_per_graph]
    rec["graphs"] = [[[n.op, n.name, qualified(n.target)] for n in g.graph.nodes] for g in ex.graphs]
    guards = []
    for g in ex.out_guards or []:
        try:
            create = g.inner_create_fn().__name__
        except Exception:
            create = getattr(g.create_fn, "__name__", str(g.create_fn))
        guards.append({
            "name": normalize(g.name, torch_site),
            "source": g.source.name.lower() if g.source else "",
            "create_fn": create,
            "code": [normalize(c, torch_site) for c in (g.code_list or [])],
        })
    rec["guard_count"] = len(guards)
    rec["guards"] = guards


def shim_main(mode, program, result_path):
    import runpy
    import traceback
    import torch
    import torch._dynamo

    torch_site = os.path.dirname(os.path.dirname(torch.__file__))
    real_compile = torch.compile
    records = []
    call_order = []

    def patched_compile(model=None, **kw):
        if model is None:  # decorator with arguments: @torch.compile(fullgraph=True)
            return lambda m: patched_compile(m, **kw)
        eager_kw = dict(kw)
        if eager_kw.get("backend", "inductor") == "inductor":
            eager_kw["backend"] = "eager"
            eager_kw.pop("mode", None)
            eager_kw.pop("options", None)
        if mode == "eager":
            return real_compile(model, **eager_kw)
        is_module = isinstance(model, torch.nn.Module)
        rec = {
            "name": type(model).__name__ if is_module else getattr(model, "__name__", type(model).__name__),
            "kind": "module" if is_module else "function",
            "code": code_location(model),
            "compile_kwargs": {k: (v if isinstance(v, (bool, int, float, str, type(None))) else repr(v)) for k, v in kw.items()},
        }
        records.append(rec)
        compiled = real_compile(model, **eager_kw)
        if kw.get("disable"):
            rec["disabled"] = True  # torch.compile hands the callable back untouched: nothing to explain
            if is_module:
                return compiled

        def intercept(*args, **kwargs):
            if "first_call_args" not in rec:
                rec["first_call_args"] = describe(list(args))
                rec["first_call_kwargs"] = describe(kwargs)
                call_order.append(rec)
                if not rec.get("disabled"):
                    explain_into(rec, model, args, kwargs, kw.get("dynamic"), torch_site)
            return model(*args, **kwargs)

        if is_module:
            # Same OptimizedModule (attributes, train()/eval() forwarding), but calls go through intercept.
            cls = type(compiled)
            wrapper = type(cls.__name__, (cls,), {"__call__": lambda self, *a, **k: intercept(*a, **k)})
            object.__setattr__(compiled, "__class__", wrapper)
            return compiled
        return functools.wraps(model)(intercept)

    torch.compile = patched_compile
    sys.argv = [program]
    status = {"exit": 0}
    try:
        runpy.run_path(program, run_name="__main__")
    except SystemExit as e:
        status["exit"] = e.code if isinstance(e.code, int) else 1
    except BaseException:
        status["exit"] = 1
        status["traceback"] = normalize(traceback.format_exc(), torch_site)
        traceback.print_exc()
    if mode == "explain":
        out = {
            "functions": call_order,
            "never_called": [r for r in records if r not in call_order],
            "status": status,
        }
        with open(result_path, "w") as f:
            json.dump(out, f, indent=1)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status["exit"])


# ---------------------------------------------------------------- driver (parent)

def strip_stderr(text, torch_site):
    """Drops glog prefixes; returns the normalized text and (level, line) records."""
    lines, records = [], []
    for raw in text.splitlines():
        m = GLOG_PREFIX.match(raw)
        level = m.group(1) if m else ""
        line = normalize(raw[m.end():] if m else raw, torch_site)
        lines.append(line)
        records.append((level, line))
    return "\n".join(lines) + ("\n" if lines else ""), records


def parse_recompiles(records):
    out, current = [], None
    for _, line in records:
        m = COMPILE_ID.match(line)
        if not m or "[__recompiles] " not in line:
            continue
        body = line.split("[__recompiles] ", 1)[1]
        head = re.match(r"Recompiling function (\S+) in (.+):(\d+)$", body.strip())
        if head:
            current = {"compile_id": m.group(1), "function": head.group(1),
                       "file": os.path.basename(head.group(2)), "line": int(head.group(3)),
                       "reasons": [], "raw": []}
            out.append(current)
            continue
        if current is None:
            continue
        current["raw"].append(body)
        item = re.match(r"\s*- (\d+/\d+(?:_\d+)?): (.*)$", body)
        if item:
            reason = re.split(r"\s{2,}#\s", item.group(2))[0].strip()
            current["reasons"].append(f"{item.group(1)}: {reason}")
    return out


def parse_warnings(records):
    """Groups consecutive W-level lines that are not TORCH_LOGS artifacts into messages."""
    messages, current = [], None
    for level, line in records:
        if level == "W" and "[__" not in line:
            text = COMPILE_ID.sub("", line)
            if current is None:
                current = []
                messages.append(current)
            current.append(text)
        else:
            current = None
    return ["\n".join(m).rstrip() for m in messages]


def dump_json(doc, path):
    """indent=1, with lists of plain values kept on one line so the files stay readable."""
    text = json.dumps(doc, indent=1)
    flat = re.compile(r"\[\n[^\[\]{}]*?\n\s*\]")
    text = flat.sub(lambda m: "[" + " ".join(part.strip() for part in m.group(0)[1:-1].splitlines()).strip() + "]", text)
    with open(path, "w") as f:
        f.write(text + "\n")


def compare_stdout(a, b):
    if a == b:
        return {"identical": True}
    text_a = [" ".join(p.split()) for p in NUMBER.split(a)]
    text_b = [" ".join(p.split()) for p in NUMBER.split(b)]
    nums_a, nums_b = NUMBER.findall(a), NUMBER.findall(b)
    diff_lines = [[x, y] for x, y in zip(a.splitlines(), b.splitlines()) if x != y][:6]
    if text_a != text_b or len(nums_a) != len(nums_b):
        return {"identical": False, "text_differs": True, "differing_lines": diff_lines}
    max_abs = max_rel = 0.0
    for x, y in zip(nums_a, nums_b):
        fx, fy = float(x), float(y)
        d = abs(fx - fy)
        if d:
            max_abs = max(max_abs, d)
            max_rel = max(max_rel, d / max(abs(fx), abs(fy)))
    return {"identical": False, "text_differs": False, "max_abs": max_abs, "max_rel": max_rel,
            "differing_lines": diff_lines}


def run_job(cmd, env, cwd, timeout):
    start = time.time()
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return {"rc": p.returncode, "stdout": p.stdout, "stderr": p.stderr, "secs": round(time.time() - start, 1)}
    except subprocess.TimeoutExpired as e:
        def text(v):
            return v.decode(errors="replace") if isinstance(v, bytes) else (v or "")
        return {"rc": "timeout", "stdout": text(e.stdout), "stderr": text(e.stderr), "secs": round(time.time() - start, 1)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--examples", default=os.path.join(REPO, "resources", "examples"))
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--stage", default="/home/dev/models")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 4)
    ap.add_argument("--timeout", type=int, default=420)
    ap.add_argument("--only", default="", help="comma-separated program name prefixes")
    ap.add_argument("--shim", nargs=3, metavar=("MODE", "PROGRAM", "RESULT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.shim:
        shim_main(*a.shim)
        return

    import torch
    torch_site = os.path.dirname(os.path.dirname(torch.__file__))
    programs = sorted(f for f in os.listdir(a.examples) if re.match(r"e\d+_.*\.py$", f))
    if a.only:
        prefixes = a.only.split(",")
        programs = [p for p in programs if any(p.startswith(x) for x in prefixes)]
    os.makedirs(a.stage, exist_ok=True)
    os.makedirs(a.out, exist_ok=True)
    scratch = os.path.join(a.stage, "_explain")
    os.makedirs(scratch, exist_ok=True)
    for p in programs:
        shutil.copy(os.path.join(a.examples, p), os.path.join(a.stage, p))

    base_env = dict(os.environ)
    # One thread per process: results do not depend on the core count, and 3 runs per program run side by side.
    base_env.update({"OMP_NUM_THREADS": "1", "TORCHINDUCTOR_COMPILE_THREADS": "1", "PYTHONHASHSEED": "0"})
    base_env.pop("TORCH_LOGS", None)
    logged_env = dict(base_env, TORCH_LOGS="graph_breaks,recompiles")
    me = os.path.abspath(__file__)

    jobs = {}
    for p in programs:
        name = p[:-3]
        prog = os.path.join(a.stage, p)
        result = os.path.join(scratch, name + ".json")
        jobs[(name, "inductor")] = ([sys.executable, prog], logged_env)
        jobs[(name, "eager")] = ([sys.executable, me, "--shim", "eager", prog, result + ".unused"], logged_env)
        jobs[(name, "explain")] = ([sys.executable, me, "--shim", "explain", prog, result], base_env)
    # Inductor runs are the slow ones (C++ compiles): start them first.
    order = sorted(jobs, key=lambda k: (k[1] != "inductor", k[0]))
    results = {}
    t0 = time.time()
    # Each run in a folder of its own: a program that saves a checkpoint by a relative
    # path must not read the file another of its runs is writing.
    def cwd_of(k):
        path = os.path.join(a.stage, "_cwd", k[0] + "." + k[1])
        os.makedirs(path, exist_ok=True)
        return path

    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as pool:
        futures = {pool.submit(run_job, jobs[k][0], jobs[k][1], cwd_of(k), a.timeout): k for k in order}
        for fut in concurrent.futures.as_completed(futures):
            k = futures[fut]
            results[k] = fut.result()
            print(f"[{time.time() - t0:6.1f}s] {k[0]} {k[1]}: rc={results[k]['rc']} ({results[k]['secs']}s)", flush=True)

    summary = []
    for p in programs:
        name = p[:-3]
        ind, eag, exp = results[(name, "inductor")], results[(name, "eager")], results[(name, "explain")]
        stderr_text, records = strip_stderr(ind["stderr"], torch_site)
        _, eager_records = strip_stderr(eag["stderr"], torch_site)
        recompile_lines = [line for _, line in records if "[__recompiles]" in line]
        eager_recompile_lines = [line for _, line in eager_records if "[__recompiles]" in line]
        with open(os.path.join(a.out, name + ".stdout"), "w") as f:
            f.write(ind["stdout"])
        with open(os.path.join(a.out, name + ".stderr.txt"), "w") as f:
            f.write(stderr_text)
        with open(os.path.join(a.out, name + ".recompiles.txt"), "w") as f:
            f.write("".join(line + "\n" for line in recompile_lines))
        # backend="eager" variants, kept only where they differ from what the default backend gives.
        for suffix, differs, text in (
                (".eager.stdout", ind["stdout"] != eag["stdout"], eag["stdout"]),
                (".recompiles.eager.txt", recompile_lines != eager_recompile_lines,
                 "".join(line + "\n" for line in eager_recompile_lines))):
            path = os.path.join(a.out, name + suffix)
            if differs:
                with open(path, "w") as f:
                    f.write(text)
            elif os.path.exists(path):
                os.remove(path)
        explained = {"functions": [], "never_called": [], "status": {"exit": exp["rc"]}}
        try:
            with open(os.path.join(scratch, name + ".json")) as f:
                explained = json.load(f)
        except (OSError, ValueError) as e:
            explained["status"]["error"] = str(e)
            explained["status"]["stderr_tail"] = normalize(exp["stderr"], torch_site)[-3000:]
        recompiles = parse_recompiles(records)
        for fn in explained["functions"] + explained["never_called"]:
            code = fn.get("code") or {}
            fn["recompiles"] = [
                {k: r[k] for k in ("compile_id", "function", "reasons")}
                for r in recompiles
                if r["file"] == code.get("file") and (
                    (r["function"] == code.get("co_name") and r["line"] == code.get("line"))
                    or r["function"].startswith(f"torch_dynamo_resume_in_{code.get('co_name')}_at_"))
            ]
        doc = {
            "program": p,
            "torch_version": torch.__version__,
            "functions": explained["functions"],
            "never_called": explained["never_called"],
            "recompiles": recompiles,
            "warnings": parse_warnings(records),
            "returncode": {"inductor": ind["rc"], "eager": eag["rc"], "explain": exp["rc"]},
            "explain_status": explained["status"],
            "inductor_vs_eager_stdout": compare_stdout(ind["stdout"], eag["stdout"]),
            "recompiles_same_under_eager": recompile_lines == eager_recompile_lines,
        }
        dump_json(doc, os.path.join(a.out, name + ".explain.json"))
        funcs = ", ".join(
            f"{fn['name']}: g={fn.get('graph_count')} b={fn.get('graph_break_count')} ops={fn.get('op_count')}"
            f" rc={len(fn['recompiles'])}" for fn in explained["functions"])
        summary.append(f"{name}: rc={doc['returncode']} secs={[ind['secs'], eag['secs'], exp['secs']]} "
                       f"recompiles={len(recompiles)} "
                       f"warnings={len(doc['warnings'])} stdout_cmp={doc['inductor_vs_eager_stdout']} "
                       f"same_recompiles_eager={doc['recompiles_same_under_eager']} | {funcs}")
        if ind["rc"] != 0:
            summary.append("  inductor stderr tail: " + normalize(ind["stderr"], torch_site)[-1500:])
        if explained["status"].get("exit"):
            summary.append("  explain status: " + json.dumps(explained["status"])[-1500:])
    print("\n".join(summary))
    print(f"total {time.time() - t0:.1f}s")


if __name__ == "__main__":
    main()
