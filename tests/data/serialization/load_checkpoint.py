# Loads checkpoint.pt (written by PyTorch, make_fixtures.py) and prints it.
import torch

s = torch.load("checkpoint.pt")
print(sorted(s.keys()))
print(s["epoch"], s["arch"], s["best_acc1"], s["sizes"], s["flags"], s["pair"])
print({k: tuple(v.shape) for k, v in s["state_dict"].items()})
print(s["state_dict"]["0.weight"], s["state_dict"]["1.running_var"], s["state_dict"]["1.num_batches_tracked"])
print(s["optimizer"]["param_groups"][0]["lr"], s["optimizer"]["param_groups"][0]["momentum"], sorted(s["optimizer"]["state"]))
print(s["optimizer"]["state"][2]["momentum_buffer"])
print(s["view"], s["whole"], s["ints"], s["mask"], s["half"], s["p"])
s["whole"][0, 1] = 100.0
print(s["view"])
