# Writes FOLDER/expected.txt: what PyTorch prints for FOLDER/program.py, run
# with PyTorch 2.11 on the device machine (the programs use CPU tensors only):
#   python3 tests/data/write_expected.py tests/data/complex
import os
import sys

folder = os.path.abspath(sys.argv[1])
lines = []


def capture(*args, sep=" ", end="\n"):
    lines.append(sep.join(str(a) for a in args) + end)


source = open(os.path.join(folder, "program.py")).read()
exec(compile(source, "program.py", "exec"), {"__name__": "__main__", "print": capture})
with open(os.path.join(folder, "expected.txt"), "w") as f:
    f.write("".join(lines))
