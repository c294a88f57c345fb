import argparse
import sys


def train(args):
    print("train", args.epochs, args.lr, args.verbose)


def evaluate(args):
    print("eval", args.checkpoint, args.verbose)


parser = argparse.ArgumentParser(prog="main.py", description="A toy trainer.")
parser.add_argument("--verbose", action="store_true", help="print more")
subparsers = parser.add_subparsers(dest="command", help="sub-command help")
p_train = subparsers.add_parser("train", help="train the model")
p_train.add_argument("--epochs", type=int, default=1, help="number of epochs")
p_train.add_argument("--lr", type=float, default=0.1)
p_train.set_defaults(func=train)
p_eval = subparsers.add_parser("eval", help="evaluate a checkpoint", aliases=["ev"])
p_eval.add_argument("checkpoint", help="path to the checkpoint")
p_eval.set_defaults(func=evaluate)

def show(ns):
    print(sorted([(k, v) for k, v in vars(ns).items() if k != "func"]), "func" in ns)


args = parser.parse_args(["train", "--epochs", "2"])
show(args)
args.func(args)
args = parser.parse_args(["--verbose", "eval", "ck.pt"])
show(args)
args.func(args)
args = parser.parse_args(["ev", "x.pt"])
print(args.command, args.checkpoint)
print(parser.parse_args([]))
ns, rest = parser.parse_known_args(["train", "--bogus", "1"])
show(ns)
print(rest)
print(parser.format_usage(), end="")
print(parser.format_help())
print(p_train.format_help())
print(p_eval.format_usage(), end="")

sys.stderr = sys.stdout
for argv in [["train", "--epochs", "x"], ["eval"], ["train", "extra"], ["--help"], ["train", "-h"]]:
    try:
        parser.parse_args(argv)
    except SystemExit as e:
        print("exit", e.code)

p2 = argparse.ArgumentParser(prog="tool")
p2.add_argument("config")
sub2 = p2.add_subparsers(title="commands", description="what to run", dest="cmd", required=True)
a = sub2.add_parser("fit", help="fit it")
a.add_argument("-n", type=int, default=3)
sub2.add_parser("predict")
print(p2.format_help())
print(p2.parse_args(["c.yaml", "fit", "-n", "5"]))
for argv in [["c.yaml"], ["c.yaml", "fit", "-n"]]:
    try:
        p2.parse_args(argv)
    except SystemExit as e:
        print("exit", e.code)

p3 = argparse.ArgumentParser(prog="x")
s3 = p3.add_subparsers()
s3.add_parser("go")
print(p3.format_help())
print(p3.parse_args(["go"]))
sys.stderr = sys.__stderr__
parser.parse_args(["fly"])
