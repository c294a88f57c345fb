# collections.abc and typing aliases in isinstance/issubclass: builtins, structural
# matches, registration, mixin methods of user subclasses, parameterized generics.
import collections.abc as cabc
import collections
from collections.abc import Sequence, Mapping, Iterable, Iterator, Callable, Hashable, Sized, MutableMapping
import typing
from typing import Sequence as TSeq, List, Dict, Optional, Union
print(isinstance([1, 2], TSeq), isinstance((1,), TSeq), isinstance("ab", TSeq), isinstance({}, TSeq), isinstance(3, TSeq))
print(isinstance([1], Sequence), isinstance({}, Mapping), isinstance({}, MutableMapping), isinstance(set(), Sequence))
print(isinstance(iter([1]), Iterator), isinstance([1], Iterator), isinstance(iter([1]), Iterable), isinstance(range(3), Iterable))
print(isinstance(len, Callable), isinstance(3, Callable), isinstance(lambda: 0, typing.Callable))
print(isinstance(3, Hashable), isinstance([], Hashable), isinstance((1,), Hashable))
print(issubclass(list, Sequence), issubclass(dict, Mapping), issubclass(int, Sequence), issubclass(bool, int))
print(isinstance(1, Union[int, str]), isinstance(None, Optional[int]), isinstance("a", Optional[int]))
print(isinstance([1], List), isinstance({}, Dict), isinstance(collections.deque(), typing.Deque))
try:
    isinstance([1], List[int])
except TypeError as e:
    print("TypeError:", e)
class Bag:
    def __init__(self): self.items = [1, 2, 3]
    def __iter__(self): return iter(self.items)
    def __len__(self): return len(self.items)
    def __contains__(self, x): return x in self.items
print(isinstance(Bag(), Iterable), isinstance(Bag(), Sized), isinstance(Bag(), cabc.Collection), isinstance(Bag(), Sequence))
class Seq(Sequence):
    def __init__(self, n): self.n = n
    def __getitem__(self, i):
        if i >= self.n: raise IndexError
        return i * 10
    def __len__(self): return self.n
s = Seq(4)
print(list(s), 20 in s, s.index(30), s.count(10), list(reversed(s)), isinstance(s, Sequence), isinstance(s, Iterable))
class M(MutableMapping):
    def __init__(self): self.d = {}
    def __getitem__(self, k): return self.d[k]
    def __setitem__(self, k, v): self.d[k] = v
    def __delitem__(self, k): del self.d[k]
    def __iter__(self): return iter(self.d)
    def __len__(self): return len(self.d)
m = M(); m.update({"a": 1}, b=2); m.setdefault("c", 3)
print(sorted(m.keys()), m.get("z", 9), "a" in m, m.pop("a"), len(m), isinstance(m, Mapping))
class Mine: pass
Sequence.register(Mine)
print(isinstance(Mine(), Sequence), issubclass(Mine, Sequence), isinstance(Mine(), Mapping))
print(typing.Sequence, Sequence[int] is Sequence)
print(Sequence[int], Mapping[str, int])
try:
    isinstance([], Sequence[int])
except TypeError as e:
    print("TypeError:", e)
print(isinstance(s, cabc.Reversible), isinstance(m, cabc.Collection), isinstance({1}, cabc.Set), isinstance(frozenset(), cabc.MutableSet))
