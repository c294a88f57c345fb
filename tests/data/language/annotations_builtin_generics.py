import collections
from typing import Any, Optional


def f(a: list[int], b: dict[str, Any], c: tuple[int, ...], d: int | None = None, e: "collections.OrderedDict[str, int]" = None) -> set[str]:
    return set()


print(f.__annotations__)
print(list[int], dict[str, list[int]], int | None, type(int | None))
print(Optional[list[int]])
