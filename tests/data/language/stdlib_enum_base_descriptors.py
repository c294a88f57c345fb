# Properties, classmethods and staticmethods defined on an Enum base class are not
# members; they work on a subclass's members and through the subclass.
from enum import Enum


class Base(Enum):
    @property
    def meta(self):
        return self.value["meta"]

    @classmethod
    def names(cls):
        return [m.name for m in cls]

    @classmethod
    def by_meta(cls, meta):
        for m in cls:
            if m.meta == meta:
                return m
        return None

    @staticmethod
    def helper(x):
        return x * 2


class W(Base):
    V1 = {"meta": 1, "label": "one"}
    V2 = {"meta": 2, "label": "two"}


print(W.V1.meta, W.V2.meta, W.names(), W.by_meta(2), W.helper(4), len(W), list(Base))
print(W.V1.value["label"], W.V1.__module__, type(W.V2).__name__, isinstance(W.V1, Base), W["V2"] is W.V2)


class Color(Enum):
    RED = 1
    GREEN = 2

    @property
    def pretty(self):
        return self.name.lower()

    @classmethod
    def default(cls):
        return cls.RED


print([c.pretty for c in Color], Color.default(), Color.__members__.keys(), Color(2))
