"""A stand-in for Kiln's persistent PyTorch oracle worker, for tests on
machines without PyTorch. It speaks the same protocol (minifier/oracle_pool.h):
requests on stdin, replies on fd 3, each candidate's output in its file. What
it does with a candidate depends on the ATen ops its repro.py names:

  aten.relu     the bug: prints an accuracy failure, exit 1 (FAKE_ORACLE_BUG_OPS=relu,sigmoid
                makes the bug need every op listed, as a fusion bug needs its ops together)
  aten.atan2     crashes the worker (SIGSEGV)
  aten.erfinv  hangs
  aten.lgamma      grows to 600 MB while running
  aten.digamma      keeps 300 MB after answering (a leak between candidates)
  aten.trunc      answers, then asks to be restarted
  aten.frac      sleeps 0.5 s (parallel slots)
anything else passes (exit 0).

FAKE_ORACLE_NOT_READY=1 makes it refuse to start, as a worker without torch does.
"""
import json
import os
import signal
import sys
import time

replies = os.fdopen(3, "w", buffering=1)
leaked = []


def reply(message):
    replies.write(json.dumps(message) + "\n")
    replies.flush()


def judge(text, out):
    out.write("fake worker pid %d\n" % os.getpid())
    for name in ("PYTHONPYCACHEPREFIX", "PYTHONDONTWRITEBYTECODE", "TORCHINDUCTOR_COMPILE_THREADS"):
        out.write("env %s=%s\n" % (name, os.environ.get(name, "(unset)")))
    out.flush()
    if "aten.atan2" in text:
        os.kill(os.getpid(), signal.SIGSEGV)
    if "aten.erfinv" in text:
        while True:
            time.sleep(1)
    if "aten.lgamma" in text:
        held = b"x" * (600 << 20)
        time.sleep(5)
        del held
    if "aten.digamma" in text:
        leaked.append(b"x" * (300 << 20))
    if "aten.frac" in text:
        time.sleep(0.5)
    out.write("KILN_TIMING run_s=0.0010\n")
    bug_ops = os.environ.get("FAKE_ORACLE_BUG_OPS", "relu").split(",")
    if all("torch.ops.aten.%s." % op in text for op in bug_ops):
        out.write("ACCURACY FAILURE: output 0: max_abs=1\nKILN_FAILURE_CLASS=accuracy\n")
        return 1
    out.write("no accuracy failure\n")
    return 0


def main():
    if os.environ.get("FAKE_ORACLE_NOT_READY"):
        reply({"ready": False, "error": "No module named 'torch'"})
        return 2
    reply({"ready": True, "pid": os.getpid(), "torch": "fake"})
    for line in sys.stdin:
        request = json.loads(line)
        with open(request["repro"]) as f:
            text = f.read()
        with open(request["output"], "w") as out:
            code = judge(text, out)
        message = {"id": request["id"], "exit": code}
        if "aten.trunc" in text:
            message["restart"] = True
        reply(message)
    return 0


sys.exit(main())
