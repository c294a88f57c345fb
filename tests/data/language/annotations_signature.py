import functools
import inspect
from typing import Optional, List, get_args, get_origin, ClassVar
from dataclasses import dataclass, field, fields, KW_ONLY


def f(a: int, b: str = "x", *args: float, c: Optional[int] = None, **kw: dict) -> List[int]:
    return [a]


print(f.__annotations__)
sig = inspect.signature(f)
print(sig)
for p in sig.parameters.values():
    print(p.name, p.annotation, p.default, repr(p))
print(sig.return_annotation, get_origin(sig.return_annotation), get_args(sig.return_annotation))
print(get_args(sig.parameters["c"].annotation), get_args(Optional[int]))


def g(x, y=2):
    return x


print(g.__annotations__, inspect.signature(g).return_annotation is inspect.Signature.empty)
print(inspect.signature(g).parameters["x"].annotation is inspect.Parameter.empty)


def deco(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@deco
def h(t: "Tensor", n: int = 3) -> "Tensor":
    return t


print(inspect.signature(h), h.__wrapped__.__name__, h.__annotations__)
print(inspect.signature(h, follow_wrapped=False))


class C:
    x: int = 3
    y: "List[str]"
    z: ClassVar[int] = 0

    def __init__(self, a: int, b: float = 1.0) -> None:
        self.a = a

    def m(self, k: bool) -> int:
        return 1


print(C.__annotations__)
print(inspect.signature(C), inspect.signature(C(1).m), inspect.signature(C.m))


@dataclass
class D:
    a: int
    b: List[int] = field(default_factory=list)
    c: ClassVar[str] = "k"
    _: KW_ONLY
    d: float = 0.5


print(D(1), [(x.name, x.type) for x in fields(D)], list(D.__annotations__))
v: int = 5
print(__annotations__)


def outer():
    T = float

    def inner(q: T) -> T:
        return q
    return inner


print(outer().__annotations__)
print(str(inspect.Parameter("p", inspect.Parameter.KEYWORD_ONLY, annotation=int, default=3)))
