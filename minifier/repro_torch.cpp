// write_torch_repro: a repro.py in PyTorch's after_aot style that runs on
// stock PyTorch 2.x, with its inputs in a safetensors file beside it. The run
// block is written out in full rather than calling torch._dynamo.repro's
// run_repro, whose signature changes between releases.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <nlohmann/json.hpp>

#include "core/graph/printer.h"
#include "core/graph/spelling.h"
#include "core/io/safetensors.h"
#include "minifier/repro.h"
#include "minifier/repro_internal.h"
#include "core/util/output_text.h"

namespace kiln::minify {

namespace fs = std::filesystem;

namespace {

// The Python that loads the inputs and runs the check; {placeholders} are
// filled in by write_script. Kept free of constructs Kiln's Python parser
// refuses, so tests can parse the whole file.
constexpr std::string_view kPrelude = R"PY(import os
import sys
import json
import math
import struct
import time
import operator

import torch
from torch import device, tensor
from math import inf, nan
try:
    # Inductor registers its own prims (torch.ops.prims._low_memory_max_pool_with_offsets,
    # prepare_softmax_online, the random prims) only when it is imported: without
    # this, eager fails on graphs Inductor wrote.
    import torch._inductor.inductor_prims  # noqa: F401
except ImportError:
    pass

# KILN_REPRO_INJECT=relu:accuracy|relu:compile-error|relu:crash sets Inductor's
# own inject_relu_bug_TESTING_ONLY (cpp and triton) before anything compiles,
# so an oracle command can ask for a known bug without editing this file.
_INJECT = os.environ.get("KILN_REPRO_INJECT", "")
if _INJECT:
    _INDUCTOR_BUG = {"accuracy": "accuracy", "compile-error": "compile_error", "compile_error": "compile_error",
                     "crash": "runtime_error", "runtime_error": "runtime_error"}
    _op, _sep, _kind = _INJECT.partition(":")
    if _op != "relu" or _kind not in _INDUCTOR_BUG:
        sys.exit("KILN_REPRO_INJECT=" + _INJECT + ": expected relu:accuracy, relu:compile-error or relu:crash")
    import torch._inductor.config
    torch._inductor.config.cpp.inject_relu_bug_TESTING_ONLY = _INDUCTOR_BUG[_kind]
    torch._inductor.config.triton.inject_relu_bug_TESTING_ONLY = _INDUCTOR_BUG[_kind]

)PY";

constexpr std::string_view kRunBlock = R"PY(

_SAFETENSORS_DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
                       "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
                       "U8": torch.uint8, "BOOL": torch.bool}


def read_safetensors(path):
    """The safetensors format read without the safetensors package."""
    with open(path, "rb") as f:
        data = f.read()
    header_size = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + header_size])
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = bytearray(data[8 + header_size + begin:8 + header_size + end])
        dtype = _SAFETENSORS_DTYPES[entry["dtype"]]
        if len(raw) == 0:
            out[name] = torch.empty(entry["shape"], dtype=dtype)
        else:
            out[name] = torch.frombuffer(raw, dtype=dtype).reshape(entry["shape"])
    return out


def load_args():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), INPUTS_FILE)
    if os.path.exists(path):
        try:
            from safetensors.torch import load_file
            values = load_file(path)
            how = "safetensors"
        except ImportError:
            values = read_safetensors(path)
            how = "built-in reader"
        values = [values[name] for name, size, stride, dtype in INPUTS]
        print("inputs: loaded from " + path + " (" + how + ")")
    else:
        from torch._dynamo.testing import rand_strided
        torch.manual_seed(SEED)
        values = [rand_strided(size, stride, dtype, "cpu") for name, size, stride, dtype in INPUTS]
        if RECORDED_INPUTS:
            print("inputs: " + INPUTS_FILE + " not found, regenerated with torch.manual_seed(" + str(SEED) +
                  "): %d recorded inputs now hold other values, so the failure may not reproduce" % RECORDED_INPUTS)
        else:
            print("inputs: " + INPUTS_FILE + " not found, regenerated with torch.manual_seed(" + str(SEED) +
                  ") and rand_strided, as Kiln drew them")
    args = []
    for (name, size, stride, dtype), value in zip(INPUTS, values):
        arg = torch.empty_strided(size, stride, dtype=dtype, device=DEVICE)
        arg.copy_(value)
        args.append(arg)
    return args


def flatten(x):
    if isinstance(x, (list, tuple)):
        out = []
        for item in x:
            out.extend(flatten(item))
        return out
    return [x]


def rmse(a, b):
    return torch.sqrt(torch.mean(torch.square(a - b))).item() if a.numel() else 0.0


def compare_one(ref, res, fp64):
    """Kiln's accuracy predicate (minifier/predicate.h), as torch._dynamo's same():
    the compiled output passes when it is allclose to eager (atol = rtol = the
    tolerance, NaNs equal), or else when its RMSE against the float64 eager run
    is at most 3 times eager's own plus tolerance/10. Returns why it fails, or ""."""
    if not isinstance(ref, torch.Tensor) or not isinstance(res, torch.Tensor):
        return "" if isinstance(ref, torch.Tensor) == isinstance(res, torch.Tensor) else "one side is not a tensor"
    if tuple(ref.shape) != tuple(res.shape):
        return "sizes differ: %s vs %s" % (list(ref.shape), list(res.shape))
    a = ref.detach().to(device="cpu", dtype=torch.float64)
    b = res.detach().to(device="cpu", dtype=torch.float64)
    if not ref.is_floating_point():
        if CHECK_NON_FLOAT and not torch.equal(a, b):
            return "non-float outputs differ"
        return ""
    both_nan = torch.isnan(a) & torch.isnan(b)
    d = (a - b).abs()
    close = both_nan | (d <= TOLERANCE + TOLERANCE * b.abs())
    if bool(close.all()):
        return ""
    max_abs = d[~both_nan].max().item()
    if not isinstance(fp64, torch.Tensor):
        return "max_abs=%g (no fp64 reference)" % max_abs
    f = fp64.detach().to(device="cpu", dtype=torch.float64)
    res_error, ref_error = rmse(f, b), rmse(f, a)
    if math.isfinite(res_error) and res_error <= 3.0 * ref_error + TOLERANCE / 10.0:
        return ""
    return "RMSE (res-fp64): %.5f, (ref-fp64): %.5f, max_abs=%g" % (res_error, ref_error, max_abs)


def errors_against_fp64(fp64_outs, compiled_outs):
    """The largest absolute and relative error of the float outputs against the float64 run."""
    worst_abs, worst_rel = 0.0, 0.0
    for f, g in zip(fp64_outs, compiled_outs):
        if not isinstance(f, torch.Tensor) or not isinstance(g, torch.Tensor) or not f.is_floating_point():
            continue
        if tuple(f.shape) != tuple(g.shape) or f.numel() == 0:
            continue
        r = f.detach().to(device="cpu", dtype=torch.float64)
        d = (g.detach().to(device="cpu", dtype=torch.float64) - r).abs()
        worst_abs = max(worst_abs, torch.nan_to_num(d, nan=inf, posinf=inf).max().item())
        rel = torch.where(d == 0, torch.zeros_like(d), d / r.abs())
        worst_rel = max(worst_rel, torch.nan_to_num(rel, nan=inf, posinf=inf).max().item())
    return worst_abs, worst_rel


def fp64_module(mod):
    """The float64 reference as torch._dynamo's minifier makes it: the graph's
    own dtype arguments (casts to bf16 in a mixed-precision graph) become
    float64 too (cast_dtype_args_to_fp64), where this PyTorch has it."""
    try:
        from torch._dynamo.debug_utils import cast_dtype_args_to_fp64
        return cast_dtype_args_to_fp64(torch.fx.symbolic_trace(mod))
    except Exception:
        return mod


# Which half failed, on one line the minifier reads: an exception in eager is
# not the compiler's bug, and minifying it would chase the wrong failure.
def failure_class(cls, e):
    print("KILN_FAILURE_CLASS=%s %s: %s" % (cls, type(e).__name__, (str(e).splitlines() or [""])[0][:300]))
    sys.stdout.flush()


def is_compile_error(e):
    compile_errors = ["BackendCompilerFailed", "InductorError", "LoweringException", "CompilationError",
                      "TorchRuntimeError", "Unsupported", "InternalTorchDynamoError"]
    for cls in type(e).__mro__:
        if cls.__name__ in compile_errors:
            return True
    return False


def run_eager(mod, args):
    try:
        return flatten(mod(*args))
    except Exception as e:
        failure_class("eager-exception", e)
        raise


def run_compiled(mod, args):
    try:
        out = flatten(torch.compile(mod, backend=BACKEND)(*args))
        if DEVICE.startswith("cuda"):
            torch.cuda.synchronize()
        return out
    except Exception as e:
        failure_class("compile-error" if is_compile_error(e) else "runtime-error", e)
        raise


def check(mod, args):
    with torch.no_grad():
        if CHECK in ("accuracy", "cpu-gpu-mismatch"):
            eager = run_eager(mod, args)
            try:
                fp64 = flatten(fp64_module(mod)(*[a.to(torch.float64) if a.is_floating_point() else a for a in args]))
            except Exception as e:
                # As torch._dynamo's same() when it cannot make fp64 outputs (a graph
                # that casts some inputs to bf16 itself mixes dtypes): eager alone judges.
                print("no float64 reference (%s: %s); judging against eager alone" %
                      (type(e).__name__, (str(e).splitlines() or [""])[0]))
                fp64 = [None] * len(eager)
            compiled = run_compiled(mod, args)
            worst_abs, worst_rel = errors_against_fp64(fp64, compiled)
            print("max_abs=%.6g max_rel=%.6g (compiled against eager in float64), tolerance=%g" %
                  (worst_abs, worst_rel, TOLERANCE))
            if len(compiled) != len(eager):
                print("KILN_FAILURE_CLASS=accuracy")
                print("ACCURACY FAILURE: compiled gives %d outputs, eager %d" % (len(compiled), len(eager)))
                return 1
            failed = False
            for i, (ref, res, f) in enumerate(zip(eager, compiled, fp64)):
                why = compare_one(ref, res, f)
                if why:
                    print("ACCURACY FAILURE: output %d: %s" % (i, why))
                    failed = True
            if failed:
                print("KILN_FAILURE_CLASS=accuracy")
                return 1
            print("no accuracy failure: torch.compile(backend=%r) agrees with eager" % BACKEND)
            return 0
        # compile-error, crash and the rest: eager first (so an eager failure is
        # named as one), then compile and run; an exception or a crash ends the
        # script with a non-zero exit on its own.
        run_eager(mod, args)
        run_compiled(mod, args)
        print("compiled and ran without error")
        return 0


def main():
    mod = Repro()
    args = load_args()
    # The time of the runs themselves, for the persistent oracle's overhead figure.
    started = time.perf_counter()
    try:
        return check(mod, args)
    finally:
        print("KILN_TIMING run_s=%.4f" % (time.perf_counter() - started))
        sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
)PY";

const char* const kKnownChecks[] = {"accuracy", "cpu-gpu-mismatch", "compile-error", "crash", "oracle"};

std::string py_tuple(const Shape& v) {
  std::string out = "(";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + (v.size() == 1 ? ",)" : ")");
}

void set_devices(Arg& a, const std::string& device) {
  if (a.kind == Arg::Kind::Device) a.s = device;
  for (Arg& item : a.items) set_devices(item, device);
}

// The graph as the Repro module's forward: GraphModule.code's form, with every
// device argument moved to the repro's device.
std::string repro_class(const Graph& source, const std::string& device) {
  if (!source.subgraphs.empty())
    throw Error("the graph has submodules (higher-order op bodies), which a repro.py cannot hold yet");
  Graph g = source;
  g.class_name = "Repro";
  g.pytree_args.clear();
  g.pytree_out = false;
  g.expanded_def = false;
  for (Node& n : g.nodes) {
    if (n.op == OpKind::GetAttr || n.op == OpKind::CallModule)
      throw Error("node '" + n.name + "' (" + std::string(op_kind_name(n.op)) +
                  ") reads module state, which a repro.py of ATen calls cannot hold");
    if (n.op == OpKind::Placeholder && !is_python_identifier(n.name))
      throw Error("placeholder '" + n.name + "' is not a Python identifier");
    for (Arg& a : n.args) set_devices(a, device);
    for (auto& [key, a] : n.kwargs) set_devices(a, device);
  }
  PrintOptions o;
  o.verbose = false;
  return print_graph_module(g, o);
}

uint64_t seed_of(const Repro& r) {
  static const std::regex seed(R"(random \(seed (\d+)\))");
  for (const std::string& o : r.input_origins) {
    std::smatch m;
    if (std::regex_search(o, m, seed)) return std::stoull(m[1].str());
  }
  return kDefaultInputSeed;
}

std::string script(const Repro& r, const TorchReproOptions& o, const std::string& script_name,
                   const std::string& inputs_file, const std::vector<const Node*>& placeholders) {
  // Inputs without a recorded origin are values the caller holds: recorded.
  size_t stored = 0;
  for (size_t k = 0; k < r.inputs.size(); ++k) stored += k >= r.input_origins.size() || r.input_origins[k] == "stored";
  std::string out;
  out += "# A Kiln repro in PyTorch's after_aot form; it runs on stock PyTorch 2.x.\n";
  if (!r.path.empty()) out += "# From: " + r.path + "\n";
  out += "# Replay: python " + script_name + "   (exit 1: the failure reproduced)\n";
  if (o.check == "accuracy" || o.check == "cpu-gpu-mismatch")
    out += "# Check: " + o.check + ": torch.compile(backend=" + python_str_repr(o.backend) +
           ") against eager on " + o.device +
           " (allclose, else RMSE against float64 eager: minifier/predicate.h), tolerance " +
           python_float_repr(o.tolerance) + "\n";
  else
    out += "# Check: " + o.check + ": torch.compile(backend=" + python_str_repr(o.backend) + ") and run on " +
           o.device + "; an exception or a crash is the failure\n";
  out += "# Inputs: " + std::to_string(r.inputs.size()) + " in " + inputs_file + " beside this file (" +
         std::to_string(stored) + " recorded, " + std::to_string(r.inputs.size() - stored) +
         " drawn by Kiln from seed " + std::to_string(seed_of(r)) +
         "), read with the safetensors package when it is importable, else with\n"
         "# read_safetensors below; without the file they are regenerated with torch.manual_seed and\n"
         "# rand_strided (same shapes, strides and dtypes).\n";
  out += kPrelude;
  out += repro_class(r.graph, o.device);
  out += "\n\nDEVICE = " + python_str_repr(o.device) + "\n";
  out += "CHECK = " + python_str_repr(o.check) + "\n";
  out += "TOLERANCE = " + python_float_repr(o.tolerance) + "\n";
  out += std::string("CHECK_NON_FLOAT = ") + (o.check_non_float ? "True" : "False") + "\n";
  out += "BACKEND = " + python_str_repr(o.backend) + "\n";
  out += "SEED = " + std::to_string(seed_of(r)) + "\n";
  out += "RECORDED_INPUTS = " + std::to_string(stored) + "  # the rest Kiln drew from SEED as rand_strided does\n";
  out += "INPUTS_FILE = " + python_str_repr(inputs_file) + "\n";
  out += "# (name, sizes, strides, dtype) per forward() argument\n";
  out += "INPUTS = [\n";
  for (size_t k = 0; k < placeholders.size(); ++k) {
    const Tensor& t = r.inputs[k];
    out += "    (" + python_str_repr(placeholders[k]->name) + ", " + py_tuple(t.sizes()) + ", " + py_tuple(t.strides()) +
           ", torch." + std::string(dtype_name(t.dtype())) + "),\n";
  }
  out += "]\n";
  out += kRunBlock;
  return out;
}

void write_atomically(const fs::path& p, const std::string& text) {
  fs::path tmp = p;
  tmp += ".tmp-" + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("cannot create the file", {tmp.string(), 0});
    f << text;
    f.close();
    if (!f) throw Error("could not write the file (disk full?)", {tmp.string(), 0});
  }
  std::error_code ec;
  fs::rename(tmp, p, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error("cannot move the file into place", {p.string(), 0});
  }
}

void write_torch(const std::string& path, const Repro& r, const TorchReproOptions& o) {
  bool known = false;
  for (const char* c : kKnownChecks) known = known || o.check == c;
  if (!known) throw Error("unknown check '" + o.check + "' (accuracy, cpu-gpu-mismatch, compile-error, crash, oracle)");
  if (!(o.tolerance >= 0)) throw Error("the tolerance must be a number >= 0");
  std::vector<const Node*> placeholders;
  for (const Node& n : r.graph.nodes)
    if (n.op == OpKind::Placeholder) placeholders.push_back(&n);
  if (placeholders.size() != r.inputs.size())
    throw Error("the graph has " + std::to_string(placeholders.size()) + " placeholders but the repro " +
                std::to_string(r.inputs.size()) + " inputs");
  fs::path script_path(path);
  fs::path inputs_path = script_path;
  inputs_path.replace_extension(".safetensors");
  NamedTensors tensors;
  for (size_t k = 0; k < placeholders.size(); ++k) {
    if (!r.inputs[k].defined() || r.inputs[k].is_meta()) throw Error("input '" + placeholders[k]->name + "' has no data");
    tensors.emplace_back(placeholders[k]->name, plain_contiguous(r.inputs[k]));
  }
  std::string text = script(r, o, script_path.filename().string(), inputs_path.filename().string(), placeholders);
  // The origins, as the Kiln repro stores them, so reading the script back says which inputs were recorded.
  nlohmann::json origins = nlohmann::json::array();
  for (size_t k = 0; k < placeholders.size(); ++k) origins.push_back(k < r.input_origins.size() ? r.input_origins[k] : "stored");
  Status st = write_safetensors(inputs_path.string(), tensors, {{std::string(kOriginsKey), kiln::json_text(origins)}});
  if (!st.ok()) throw Error(st.message(), st.where());
  write_atomically(script_path, text);
}

}  // namespace

Status write_torch_repro(const std::string& path, const Repro& r, const TorchReproOptions& options) {
  try {
    write_torch(path, r, options);
  } catch (const Error& e) {
    Status s = e.to_status();
    if (s.where().file.empty()) return Status::error(s.message(), {path, 0});
    return s;
  }
  return Status();
}

}  // namespace kiln::minify
