// The persistent oracle's worker (oracle_pool.h has the protocol). It runs
// each repro.py as `python repro.py` would, in this process: torch, CUDA and
// Inductor's compile workers are paid for once. Between candidates Dynamo is
// reset and the Inductor and Dynamo configs are put back, so one candidate's
// settings (KILN_REPRO_INJECT sets Inductor's injected bug) cannot leak into
// the next.
#include "minifier/oracle_pool.h"

namespace kiln::minify {

namespace {

constexpr std::string_view kWorker = R"PY(import gc
import json
import os
import runpy
import sys
import time
import traceback

replies = os.fdopen(3, "w", buffering=1)
started = time.perf_counter()


def reply(message):
    replies.write(json.dumps(message) + "\n")
    replies.flush()


try:
    import torch
    import torch._dynamo
    import torch._inductor.config
    try:
        import torch._inductor.inductor_prims  # noqa: F401  (Inductor's own prims, as repro.py imports them)
    except ImportError:
        pass
except BaseException as e:
    reply({"ready": False, "error": "cannot import torch with %s: %s: %s" % (sys.executable, type(e).__name__, e)})
    sys.exit(2)


imported_s = time.perf_counter() - started


def save_configs():
    saved = []
    for module in (torch._inductor.config, torch._dynamo.config):
        try:
            saved.append((module, module.save_config()))
        except Exception:
            pass
    return saved


def restore_configs(saved):
    for module, state in saved:
        try:
            module.load_config(state)
        except Exception:
            pass


def warm_up(device):
    """One tiny compile, so the first candidate does not pay for Triton's or
    the C++ compiler's first start and Inductor's compile workers."""
    started = time.perf_counter()
    try:
        x = torch.randn(64, device=device)
        torch.compile(lambda a: torch.sin(a) + 1)(x)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    except Exception as e:
        print("warm-up on %s failed (%s: %s); going on" % (device, type(e).__name__, e))
    torch._dynamo.reset()
    return time.perf_counter() - started


def usable_after():
    """False when the candidate broke the CUDA context (an illegal address in
    compiled code poisons every later call): the pool starts a new worker."""
    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return True
    try:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        return True
    except Exception:
        return False


def run_one(request, saved):
    sys.stdout.flush()
    sys.stderr.flush()
    out = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    keep_out, keep_err = os.dup(1), os.dup(2)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    cwd, argv = os.getcwd(), sys.argv
    code = 0
    try:
        os.chdir(os.path.dirname(request["repro"]))
        sys.argv = [request["repro"]]
        runpy.run_path(request["repro"], run_name="__main__")
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        sys.argv = argv
        os.chdir(cwd)
        sys.stdout = sys.__stdout__
        sys.stderr = sys.__stderr__
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(keep_out, 1)
        os.dup2(keep_err, 2)
        os.close(keep_out)
        os.close(keep_err)
    torch._dynamo.reset()
    restore_configs(saved)
    usable = usable_after()
    gc.collect()
    return code, usable


def main():
    device = ""
    if "--warm-up" in sys.argv:
        device = sys.argv[sys.argv.index("--warm-up") + 1]
    saved = save_configs()
    warm_s = warm_up(device) if device else 0.0
    reply({"ready": True, "pid": os.getpid(), "torch": torch.__version__, "import_s": imported_s, "warm_up_s": warm_s})
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        code, usable = run_one(request, saved)
        message = {"id": request["id"], "exit": code}
        if not usable:
            message["restart"] = True
        reply(message)


main()
)PY";

}  // namespace

std::string_view oracle_worker_script() { return kWorker; }

}  // namespace kiln::minify
