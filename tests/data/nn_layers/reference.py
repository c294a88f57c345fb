# Writes expected.txt and errors.txt beside this file from PyTorch (run with
# PyTorch 2.11 on a CPU build or with CUDA present; the program uses CPU tensors):
#   python3 reference.py
# program.py runs unchanged in CPython and in Kiln. Each error statement runs
# under try/except and records "Type: first line of the message".
import os
import warnings

import torch
import torch.nn as nn

warnings.simplefilter("ignore")
here = os.path.dirname(os.path.abspath(__file__))
source = open(os.path.join(here, "program.py")).read()
lines = []


def capture(*args, sep=" ", end="\n"):
    lines.append(sep.join(str(a) for a in args) + end)


exec(compile(source, "program.py", "exec"), {"__name__": "__main__", "print": capture})
with open(os.path.join(here, "expected.txt"), "w") as f:
    f.write("".join(lines))

pairs = open(os.path.join(here, "errors.txt")).read().splitlines()
header, statements = pairs[0], pairs[1::2]
out = [header]
for statement in statements:
    try:
        exec(statement, {"torch": torch, "nn": nn})
        result = "NOERROR"
    except Exception as e:
        text = str(e).splitlines()[0] if str(e) else ""
        result = type(e).__name__ + (": " + text if text else "")
    out += [statement, result]
with open(os.path.join(here, "errors.txt"), "w") as f:
    f.write("\n".join(out) + "\n")
