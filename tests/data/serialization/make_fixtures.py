#!/usr/bin/env python3
"""Writes the torch.load fixtures of tests/python/test_python_serialization.cpp.

checkpoint.pt: a training checkpoint as PyTorch writes it (a state_dict with
BatchNorm buffers, SGD momentum state, a view sharing its base's storage, a
Parameter, ints, bools, a torch.Size); checkpoint.txt: what PyTorch prints
loading it (load_checkpoint.py). hostile.pt: a well-formed archive whose
pickle calls os.system, which a loader must refuse without running.
Run with PyTorch from anywhere: python3 tests/data/serialization/make_fixtures.py
"""
import pathlib
import subprocess
import sys
import zipfile

HERE = pathlib.Path(__file__).resolve().parent


def main():
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    m(torch.randn(5, 3)).sum().backward()
    opt.step()
    x = torch.arange(12.0).reshape(3, 4)
    state = {"epoch": 3, "arch": "mlp", "best_acc1": 0.75, "state_dict": m.state_dict(), "optimizer": opt.state_dict(),
             "view": x[:, 1], "whole": x, "sizes": torch.Size([2, 3]), "flags": [True, None, -7, 2**40, 1e-3],
             "pair": (1, "a"), "p": nn.Parameter(torch.ones(2)), "ints": torch.tensor([1, 2]),
             "mask": torch.tensor([True, False]), "half": torch.tensor([0.5, 2.0], dtype=torch.float16)}
    torch.save(state, HERE / "checkpoint.pt")
    out = subprocess.run([sys.executable, str(HERE / "load_checkpoint.py")], cwd=HERE, capture_output=True, text=True,
                         check=True)
    (HERE / "checkpoint.txt").write_text(out.stdout)
    (HERE / "torch_version.txt").write_text(torch.__version__ + "\n")
    with zipfile.ZipFile(HERE / "hostile.pt", "w", zipfile.ZIP_STORED) as z:
        z.writestr("hostile/data.pkl", b"\x80\x02cos\nsystem\nX\x07\x00\x00\x00echo hi\x85R.")
        z.writestr("hostile/version", "3\n")


if __name__ == "__main__":
    main()
