# Writes expected.txt beside this file: what PyTorch prints for program.py
# (run with PyTorch 2.11; the program uses CPU tensors only):
#   python3 reference.py
import os

here = os.path.dirname(os.path.abspath(__file__))
lines = []


def capture(*args, sep=" ", end="\n"):
    lines.append(sep.join(str(a) for a in args) + end)


source = open(os.path.join(here, "program.py")).read()
exec(compile(source, "program.py", "exec"), {"__name__": "__main__", "print": capture})
with open(os.path.join(here, "expected.txt"), "w") as f:
    f.write("".join(lines))
