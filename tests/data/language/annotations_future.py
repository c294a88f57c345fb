from __future__ import annotations
import inspect
from typing import Optional, get_type_hints
from dataclasses import dataclass, fields


def f(a: int, b: Optional[Undefined] = None) -> dict[str, int]:
    return {}


print(f.__annotations__)
print(inspect.signature(f))
print(repr(inspect.signature(f).parameters["a"].annotation))


class C:
    x: int = 3
    y: list[str]


print(C.__annotations__)


@dataclass
class D:
    a: int
    b: str = "q"


print([(x.name, x.type) for x in fields(D)])
