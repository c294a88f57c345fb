# str methods and object builtins real programs use.
s = "  model.layers.0.attn.weight  "
t = s.strip()
print(t.find("layers"), t.find("zzz"), t.rfind("."), t.index("attn"), t.count("."), t.count("a", 5, 20))
print(t.split(".", 2), t.rsplit(".", 1), "a  b   c ".split(None, 1), " x y ".rsplit(maxsplit=1))
print(t.partition("."), t.rpartition("."), "abc".partition("z"))
print(t.startswith(("x", "model")), t.endswith("weight", 0, 10), t.startswith("layers", 6))
print("7".zfill(3), "-7".zfill(4), "ab".center(7, "*"), "ab".center(6), "abc".center(6), "x".ljust(3, "."), "x".rjust(3))
print("hello world".title(), "hELLO".capitalize(), "AbC".swapcase(), "ABC".casefold())
print("123".isdigit(), "12a".isdigit(), "abc".isalpha(), "a1".isalnum(), " \t".isspace(), "".isdigit())
print("Abc".isupper(), "ABC".isupper(), "abc1".islower(), "_x1".isidentifier(), "1x".isidentifier())
print("line1\nline2\r\nline3".splitlines(), "a\nb\n".splitlines(True))
print("prefix_name".removeprefix("prefix_"), "file.py".removesuffix(".py"))
print(chr(65), chr(955), ord("a"), ord(chr(955)), [chr(ord("a") + i) for i in range(3)])
print(hash(5), hash(-1), hash(2**62), hash(3.0), hash(True), hash(None) if False else 0)

class A:
    def __init__(self):
        self.x = 1
        self.y = 2

class B(A):
    z = 3

print(issubclass(B, A), issubclass(A, B), issubclass(B, (int, A)), issubclass(bool, int) if False else True)
print(sorted(vars(B()).items()), [n for n in dir(B()) if not n.startswith("__")])
print(issubclass(KeyError, LookupError), issubclass(B, object))
