#!/usr/bin/env python3
"""Side by side on one GPU: PyTorch eager, torch.compile (Inductor) and Kiln.

Runs the graphs of `kiln-cli bench gpu` (same sizes, same dtypes, same
formulas) through PyTorch eager and torch.compile in this process, timed the
same way (CUDA events, median of --reps after warm-up, inputs rotated through
copies worth three times L2), then runs `kiln-cli bench gpu --json` and prints
one table with every figure, and the same table as JSON with --json.

    python3 scripts/bench_gpu_torch.py --kiln build/app/kiln-cli [--reps 50] [--graph softmax]

The resnet18 row is the model of resources/examples/resnet18_infer.py (eval,
batch 16, 3x128x128), built here exactly as that program builds it: PyTorch
eager, torch.compile default and mode="reduce-overhead" beside Kiln's launch
and CUDA-graph replay. Each call gets the next of four batches, as Kiln's does.
The resnet18_train row is one training step of resources/examples/resnet18_train.py's
model at batch 16, 3x128x128 (forward, cross-entropy, backward, SGD with
momentum 0.9 and weight decay 1e-4): eager, and torch.compile default and
reduce-overhead of the whole step function (Dynamo breaks the graph at
backward(): forward and loss compile with their AOTAutograd backward, the
optimizer step compiles as a second graph), beside Kiln's one-graph step.
The attention_train_bf16_gpt row times the GPT head's forward and the
gradients of q, k and v (torch.autograd.grad with a given output gradient) in
eager, under torch.compile and through flash SDPA, beside Kiln's joint graph.
Run it from the repository root.
"""
import argparse
import copy
import json
import math
import statistics
import os
import subprocess
import sys
import types

import torch
import torch.nn.functional as F

L2_BYTES = 60 * 2**20


def graphs():
    """name -> (function, input factory, bytes or None, flops or None)."""
    def rand(*shape, dtype=torch.float32, scale=2.0):
        return ((torch.rand(*shape, device="cuda") * 2 - 1) * scale).to(dtype)

    n = 64 << 20
    def sin_cos(x):
        return torch.sin(x) + torch.cos(x)

    def chain(x, y):
        return torch.sigmoid(torch.relu(x * 2 + 1) * y - 0.5) * x

    def softmax(x):
        return torch.softmax(x, -1)

    def layer_norm(x, w, b):
        return F.layer_norm(x, (4096,), w, b, 1e-5)

    def sum_lastdim(x):
        return x.sum(-1)

    def sum_all(x):
        return x.sum()

    def var_mean(x):
        return torch.var_mean(x, -1)

    def gelu_mlp(x, w1, w2):
        return F.gelu(x @ w1, approximate="tanh") @ w2

    def attention(q, k, v):
        return torch.softmax(q @ k.transpose(1, 2) * 0.125, -1) @ v

    def causal(scores):
        s = scores.shape[-1]
        mask = torch.triu(torch.ones(s, s, dtype=torch.bool, device=scores.device), 1)
        return scores.masked_fill(mask, float("-inf"))

    def attention_causal(q, k, v):
        return torch.softmax(causal(q @ k.transpose(-2, -1) * 0.125), -1) @ v

    bf, h = torch.bfloat16, torch.float16
    return {
        "sin_cos": (sin_cos, lambda: [rand(n)], 2 * 4 * n, None),
        "pointwise_chain": (chain, lambda: [rand(n), rand(n)], 3 * 4 * n, None),
        "softmax": (softmax, lambda: [rand(8192, 8192)], 2 * 4 * 8192 * 8192, None),
        "layer_norm": (layer_norm, lambda: [rand(16384, 4096), rand(4096), rand(4096)],
                       4 * (2 * 16384 * 4096 + 2 * 4096), None),
        "sum_lastdim": (sum_lastdim, lambda: [rand(16384, 4096)], 4 * (16384 * 4096 + 16384), None),
        "var_mean": (var_mean, lambda: [rand(16384, 4096)], 4 * (16384 * 4096 + 2 * 16384), None),
        "sum_64m": (sum_all, lambda: [rand(n)], 4 * (n + 1), None),
        "gelu_mlp": (gelu_mlp, lambda: [rand(8192, 2048, dtype=bf, scale=1.0), rand(2048, 8192, dtype=bf, scale=0.03),
                                        rand(8192, 2048, dtype=bf, scale=0.03)], None, 2 * 2 * 8192 * 2048 * 8192),
        "attention": (attention, lambda: [rand(64, 1024, 64, dtype=h, scale=1.0) for _ in range(3)], None,
                      2 * 2 * 64 * 1024 * 1024 * 64),
        # Causal rows: FLOPs of the unmasked half, as FlashAttention counts them (and kiln-cli bench gpu).
        "attention_causal": (attention_causal, lambda: [rand(64, 1024, 64, dtype=h, scale=1.0) for _ in range(3)], None,
                             2 * 64 * 1024 * 1024 * 64),
        "attention_bf16_gpt": (attention_causal, lambda: [rand(4, 16, 2048, 64, dtype=bf, scale=1.0) for _ in range(3)],
                               None, 2 * 64 * 2048 * 2048 * 64),
        # Trained: forward, then the gradients of q, k, v for an output gradient (TRAINING_ROWS);
        # FLOPs as FlashAttention-2 counts them, the backward 2.5 forwards.
        "attention_train_bf16_gpt": (attention_causal, lambda: [rand(4, 16, 2048, 64, dtype=bf, scale=1.0) for _ in range(4)],
                                     None, 3.5 * 2 * 64 * 2048 * 2048 * 64),
    }


# Rows timed as a training step of the function: its inputs but the last require grad, the last is
# the output's gradient, and each call computes the output and the inputs' gradients.
TRAINING_ROWS = {"attention_train_bf16_gpt"}


def trained(fn):
    def step(*args):
        inputs, grad = args[:-1], args[-1]
        return torch.autograd.grad(fn(*inputs), inputs, grad)
    return step


def with_grad(tensors):
    return [t.requires_grad_(True) if i + 1 < len(tensors) else t for i, t in enumerate(tensors)]


def sdpa_peers():
    """Attention rows -> PyTorch's fused kernel on the same inputs: scaled_dot_product_attention
    restricted to the flash backend (the ceiling the attention rows are held to)."""
    def sdpa(causal):
        def fn(q, k, v):
            if q.dim() == 3:  # the flash backend takes [batch, heads, seq, dim] only: the batch as heads
                return F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=causal, scale=0.125)[0]
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=0.125)
        return fn
    return {"attention": sdpa(False), "attention_causal": sdpa(True), "attention_bf16_gpt": sdpa(True),
            "attention_train_bf16_gpt": sdpa(True)}


def flash_only():
    """A context that lets SDPA use only FlashAttention (an error, not a silent fallback, if it cannot)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel([SDPBackend.FLASH_ATTENTION])


def example_definitions(name, end_marker):
    """An example program's definitions (its text up to `end_marker`) as a module registered under
    its name: Dynamo, inlining a function of it, imports the module by name to read its globals."""
    path = os.path.join("resources", "examples", name + ".py")
    with open(path) as f:
        definitions = f.read().split(end_marker, 1)[0]
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    exec(compile(definitions, path, "exec"), module.__dict__)
    return module


def resnet18_model():
    """The example's model and batch (its model_and_batch()), on the GPU; the rest of the program is not run."""
    model, x = example_definitions("resnet18_infer", "\ndevice = ").model_and_batch()
    return model.cuda(), x.cuda()


def model_rows(reps, kiln_rows, only):
    """resnet18 with PyTorch's default TF32 convolutions, resnet18_fp32 with exact float32 ones."""
    model, x = resnet18_model()
    batches = [[x]] + [[x.clone()] for _ in range(3)]
    rows = []
    for name, tf32 in (("resnet18", True), ("resnet18_fp32", False)):
        if only and only != name:
            continue
        torch.backends.cudnn.allow_tf32 = tf32
        row = {"name": name, "conv_tf32": tf32}
        with torch.no_grad():
            row["eager_ms"] = time_ms(model, batches, reps)
            for mode, key in (("default", "inductor_ms"), ("reduce-overhead", "inductor_reduce_overhead_ms")):
                torch._dynamo.reset()
                compiled = torch.compile(model, mode=mode)
                for _ in range(3):
                    compiled(x)  # compile (and record the CUDA graph) outside the timing
                row[key] = time_ms(compiled, batches, reps)
        k = kiln_rows.get(name, {})
        row.update({"kiln_ms": k.get("ms"), "kiln_reduce_overhead_ms": k.get("reduce_overhead_ms"),
                    "kiln_error": k.get("error") or k.get("reduce_overhead_error"),
                    "kiln_max_error_vs_eager": k.get("max_error_vs_eager")})
        rows.append(row)
    torch.backends.cudnn.allow_tf32 = True
    return rows


def training_row(reps, kiln_rows):
    """One SGD step of resnet18_train.py's model; each mode starts from the same fresh model and optimizer."""
    model0, x, target = example_definitions("resnet18_train", "\nparser = ").model_and_batch(16, 128)
    x, target = x.cuda(), target.cuda()
    batches = [[x, target]] + [[x.clone(), target.clone()] for _ in range(3)]
    row = {"name": "resnet18_train"}
    for mode, key in ((None, "eager_ms"), ("default", "inductor_ms"), ("reduce-overhead", "inductor_reduce_overhead_ms")):
        model = copy.deepcopy(model0).cuda().train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)

        def step(inp, labels):
            opt.zero_grad()
            loss = F.cross_entropy(model(inp), labels)
            loss.backward()
            opt.step()
            return loss

        torch._dynamo.reset()
        compiled = step if mode is None else torch.compile(step, mode=mode)

        def fn(inp, labels):
            if mode == "reduce-overhead":
                # A new iteration: its CUDA graphs may overwrite the last one's outputs (PyTorch's advice for training loops).
                torch.compiler.cudagraph_mark_step_begin()
            return compiled(inp, labels)

        try:
            for _ in range(3):
                fn(x, target)  # compile (and record the CUDA graphs) outside the timing
            row[key] = time_ms(fn, batches, reps)
        except Exception as e:  # one mode failing leaves the others' figures
            row[key] = None
            row[key.replace("_ms", "_error")] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        del model, opt, fn, compiled
        torch.cuda.empty_cache()
    if row.get("inductor_reduce_overhead_ms") is None:
        # The whole step under reduce-overhead can fail in PyTorch itself (the optimizer's graph reading
        # gradients that the backward's CUDA graph overwrote); then the usual setting: only the model
        # compiled with reduce-overhead, loss, backward and SGD (foreach) eager.
        model = copy.deepcopy(model0).cuda().train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
        torch._dynamo.reset()
        compiled_model = torch.compile(model, mode="reduce-overhead")

        def model_only(inp, labels):
            torch.compiler.cudagraph_mark_step_begin()
            opt.zero_grad()
            loss = F.cross_entropy(compiled_model(inp), labels)
            loss.backward()
            opt.step()
            return loss

        try:
            for _ in range(3):
                model_only(x, target)
            row["inductor_reduce_overhead_model_only_ms"] = time_ms(model_only, batches, reps)
        except Exception as e:
            row["inductor_reduce_overhead_model_only_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        del model, opt, compiled_model
        torch.cuda.empty_cache()
    k = kiln_rows.get("resnet18_train", {})
    row.update({"kiln_ms": k.get("ms"), "kiln_reduce_overhead_ms": k.get("reduce_overhead_ms"),
                "kiln_error": k.get("error") or k.get("reduce_overhead_error"),
                "kiln_max_error_vs_eager": k.get("max_error_vs_eager")})
    return row


def time_ms(fn, input_sets, reps, warmup=5):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for i in range(warmup):
        fn(*input_sets[i % len(input_sets)])
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        args = input_sets[(warmup + i) % len(input_sets)]
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln", required=True, help="path of kiln-cli")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--graph", default="", help="only this graph")
    ap.add_argument("--row-elements", default="", help="passed to kiln-cli bench gpu (launch shapes to try)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_gpu_torch.py: no CUDA device")

    cmd = [args.kiln, "bench", "gpu", "--json", "--reps", str(args.reps)]
    if args.graph:
        cmd += ["--graph", args.graph]
    if args.row_elements:
        cmd += ["--row-elements", args.row_elements]
    kiln = subprocess.run(cmd, capture_output=True, text=True)
    if kiln.returncode != 0:
        sys.exit("kiln-cli bench gpu failed (%d):\n%s%s" % (kiln.returncode, kiln.stdout, kiln.stderr))
    kiln_rows = {r["name"]: r for r in json.loads(kiln.stdout)["rows"]}

    rows = []
    for name, (fn, make, nbytes, flops) in graphs().items():
        if args.graph and name != args.graph:
            continue
        train = name in TRAINING_ROWS
        first = make()
        per_set = sum(t.numel() * t.element_size() for t in first)
        copies = max(1, min(8, math.ceil(3 * L2_BYTES / per_set)))
        input_sets = [first] + [[t.clone() for t in first] for _ in range(copies - 1)]
        if train:
            input_sets = [with_grad(s) for s in input_sets]
        eager_ms = time_ms(trained(fn) if train else fn, input_sets, args.reps)
        torch._dynamo.reset()
        compiled = torch.compile(fn)
        if train:
            compiled = trained(compiled)
        compiled(*first)  # compile outside the timing
        inductor_ms = time_ms(compiled, input_sets, args.reps)
        k = kiln_rows.get(name, {})
        row = {"name": name, "eager_ms": eager_ms, "inductor_ms": inductor_ms, "kiln_ms": k.get("ms"),
               "kiln_ratio_to_ceiling": k.get("ratio_to_ceiling"), "ceiling": k.get("ceiling"),
               "ceiling_ms": k.get("ceiling_ms"), "kiln_error": k.get("error")}
        if nbytes:
            row["inductor_ratio_to_ceiling"] = k["ceiling_ms"] / inductor_ms if k.get("ceiling_ms") else None
            row["eager_ratio_to_ceiling"] = k["ceiling_ms"] / eager_ms if k.get("ceiling_ms") else None
        peer = sdpa_peers().get(name)
        if peer:
            if train:
                fn, peer = trained(fn), trained(peer)
            with flash_only():
                want = fn(*first)
                got = peer(*first)
                row["sdpa_flash_ms"] = time_ms(peer, input_sets, args.reps)
            # The peer computes the same thing: its distance from eager, for scale beside Kiln's tolerance.
            pairs = zip(got, want) if train else [(got, want)]
            row["sdpa_max_abs_diff_vs_eager"] = max((g.float() - w.float()).abs().max().item() for g, w in pairs)
            if k.get("ms"):
                row["kiln_vs_sdpa"] = k["ms"] / row["sdpa_flash_ms"]
                row["kiln_vs_inductor"] = k["ms"] / inductor_ms
        if flops:
            row["inductor_TFLOPs"] = flops / (inductor_ms * 1e9)
            row["kiln_TFLOPs"] = flops / (k["ms"] * 1e9) if k.get("ms") else None
            row["inductor_ratio_to_ceiling"] = k["ceiling_ms"] / inductor_ms if k.get("ceiling_ms") else None
        rows.append(row)
        del input_sets, first
        torch.cuda.empty_cache()

    models = model_rows(args.reps, kiln_rows, args.graph) if args.graph in ("", "resnet18", "resnet18_fp32") else []
    if args.graph in ("", "resnet18_train"):
        models.append(training_row(args.reps, kiln_rows))

    if args.json:
        print(json.dumps({"rows": rows, "models": models, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
                          "reps": args.reps}, indent=1))
        return
    print("%s, PyTorch %s, median of %d CUDA-event timings, inputs rotated" %
          (torch.cuda.get_device_name(), torch.__version__, args.reps))
    print("%-16s %9s %9s %9s %9s | %7s %7s %7s | %s" % ("graph", "eager_ms", "induct_ms", "kiln_ms", "ceil_ms",
                                                      "eager%", "induct%", "kiln%", "kiln vs inductor"))
    def pct(v):
        return "%6.0f%%" % (100 * v) if v else "     - "
    for r in rows:
        if r["kiln_ms"] is None:
            print("%-16s %9.4f %9.4f   kiln failed: %s" % (r["name"], r["eager_ms"], r["inductor_ms"], r["kiln_error"]))
            continue
        print("%-16s %9.4f %9.4f %9.4f %9.4f | %7s %7s %7s | %.2fx %s" % (
            r["name"], r["eager_ms"], r["inductor_ms"], r["kiln_ms"], r["ceiling_ms"],
            pct(r.get("eager_ratio_to_ceiling")), pct(r.get("inductor_ratio_to_ceiling")),
            pct(r["kiln_ratio_to_ceiling"]), r["inductor_ms"] / r["kiln_ms"],
            "faster" if r["kiln_ms"] < r["inductor_ms"] else "slower"))
    print("%: the same-run ceiling's time over the graph's (device-to-device copy of the ideal bytes; "
          "cuBLAS GEMMs alone for gelu_mlp and attention)")
    for r in rows:
        if "sdpa_flash_ms" not in r:
            continue
        print("%-18s flash SDPA %.4f ms | Kiln %s ms: %s flash SDPA's time (goal <= 1.30x), %s Inductor's (goal <= 0.50x)"
              " | SDPA vs eager max |diff| %.2g" % (
                  r["name"], r["sdpa_flash_ms"], "%.4f" % r["kiln_ms"] if r["kiln_ms"] else "-",
                  "%.2fx" % r["kiln_vs_sdpa"] if r.get("kiln_vs_sdpa") else "-",
                  "%.2fx" % r["kiln_vs_inductor"] if r.get("kiln_vs_inductor") else "-",
                  r["sdpa_max_abs_diff_vs_eager"]))
    for r in models:
        def ms(v):
            return "%.4f" % v if v is not None else "-"
        print("\n%-10s eager %s ms | Inductor %s ms, reduce-overhead %s ms | Kiln %s ms, reduce-overhead %s ms%s" % (
            r["name"], ms(r["eager_ms"]), ms(r["inductor_ms"]), ms(r["inductor_reduce_overhead_ms"]),
            ms(r["kiln_ms"]), ms(r["kiln_reduce_overhead_ms"]),
            " (kiln: %s)" % r["kiln_error"] if r["kiln_error"] else "")
              + "".join(" (%s: %s)" % (k, v) for k, v in r.items()
                        if (k.endswith("_error") and k != "kiln_error" or k.endswith("model_only_ms")) and v))


if __name__ == "__main__":
    main()
