import typing
from typing import (TypedDict, Required, NotRequired, Literal, Final, Protocol, runtime_checkable, NamedTuple,
                    get_type_hints, get_args, get_origin, TYPE_CHECKING, cast, overload, TypeVar, Generic,
                    Annotated, ParamSpec, Self, Optional, Union, List, Dict, Callable, Any)

if TYPE_CHECKING:
    import does_not_exist


class Movie(TypedDict):
    name: str
    year: int


class Partial(TypedDict, total=False):
    title: str
    rating: float


class Extended(Movie, total=False):
    director: str
    budget: Required[int]


class Mixed(TypedDict):
    a: int
    b: NotRequired[str]


m = Movie(name="Blade Runner", year=1982)
print(m, type(m), isinstance(m, dict), m["name"])
p = Partial(title="x")
print(p, Partial.__total__, Movie.__total__)
print(sorted(Movie.__required_keys__), sorted(Movie.__optional_keys__))
print(sorted(Partial.__required_keys__), sorted(Partial.__optional_keys__))
print(sorted(Extended.__required_keys__), sorted(Extended.__optional_keys__), Extended.__total__)
print(sorted(Mixed.__required_keys__), sorted(Mixed.__optional_keys__))
print(Movie.__annotations__)
print(Extended.__annotations__)
print(Movie.__name__, Movie.__qualname__ if False else "", Movie.__module__)
Point = TypedDict("Point", {"x": int, "y": int})
print(Point(x=1, y=2), Point.__name__, Point.__annotations__, sorted(Point.__required_keys__))
Opt = TypedDict("Opt", {"k": str}, total=False)
print(Opt(), Opt(k="v"), Opt.__total__, sorted(Opt.__optional_keys__))
d: Movie = {"name": "x", "year": 1}
print(d)
print(get_type_hints(Movie))

Mode = Literal["train", "eval"]
print(Mode, get_args(Mode), get_origin(Mode) is Literal)
MAX: Final[int] = 10
print(Final[int], MAX)


@runtime_checkable
class Closable(Protocol):
    def close(self) -> None:
        ...


class Res:
    def close(self) -> None:
        print("closed")


Res().close()


class Pt(NamedTuple):
    x: int
    y: float = 0.0


print(Pt(1), Pt(1, 2.5)._asdict(), Pt._fields, Pt.__annotations__)

T = TypeVar("T")
P = ParamSpec("P")
print(T, P, T.__name__)


class Box(Generic[T]):
    def __init__(self, item: T) -> None:
        self.item = item

    def get(self) -> T:
        return self.item


print(Box[int](3).get(), Box(4).item)


@overload
def conv(x: int) -> int:
    ...


@overload
def conv(x: str) -> str:
    ...


def conv(x):
    return x


print(conv(3), cast(int, "3"), cast("List[int]", [1]))

A = Annotated[int, "positive"]
print(A, get_args(A), get_origin(A) is Annotated)


def scale(x: Annotated[float, "unit"], k: Optional[int] = None, *, f: Callable[[int], str] = str) -> List[int]:
    return []


print(get_type_hints(scale))
print(get_type_hints(scale, include_extras=True))
print(get_args(get_type_hints(scale)["k"]), get_origin(get_type_hints(scale)["k"]) is Union)
print(get_origin(List[int]), get_args(Dict[str, int]), get_origin(Callable[[int], str]), get_args(Callable[[int], str]))
print(get_origin(list[int]), get_args(dict[str, int]), get_origin(int | None), get_args(int | None))
print(get_origin(int), get_args(int))


class Node:
    def clone(self) -> Self:
        return self

    def link(self, other: "Node") -> None:
        pass


print(get_type_hints(Node.link), get_type_hints(Node.clone))


class Cfg:
    lr: float = 0.1
    name: "str"


print(get_type_hints(Cfg))
print(Optional[list[int]], Union[int, str], Union[int, None] == Optional[int])
print(list[int], dict[str, list[int]], tuple[int, ...], int | None, str | int | None, type(int | None))
print(isinstance(3, int | str), isinstance(None, int | None), isinstance("s", int | float))
