class ConfigError(Exception):
    pass

def load(d, k):
    try:
        return d[k]
    except KeyError:
        raise ConfigError("missing " + k)

def outer():
    try:
        load({}, "lr")
    except ConfigError as e:
        print("context:", repr(e.__context__), "cause:", e.__cause__, e.__suppress_context__)
    try:
        try:
            1 / 0
        except ZeroDivisionError as z:
            raise ValueError("bad") from z
    except ValueError as v:
        print("cause:", repr(v.__cause__), v.__suppress_context__)
    try:
        try:
            raise OSError("x")
        except OSError:
            raise RuntimeError("y") from None
    except RuntimeError as r:
        print("from None:", r.__cause__, r.__suppress_context__, repr(r.__context__))
outer()

def reraise():
    try:
        [][0]
    except IndexError:
        raise
try:
    reraise()
except IndexError as e:
    print("reraised:", e)

class Boom:
    def __enter__(self):
        return "entered"
    def __exit__(self, t, v, tb):
        print("exit sees", t.__name__ if t is not None else None, v)
        return False

try:
    with Boom() as b:
        print(b)
        raise ValueError("inside with")
except ValueError as e:
    print("propagated", e)

with Boom():
    pass

class Counter3:
    def __init__(self):
        self.i = 0
    def __iter__(self):
        return self
    def __next__(self):
        if self.i >= 3:
            raise StopIteration
        self.i += 1
        return self.i * 10
it = Counter3()
print(next(it), list(it), next(it, "exhausted"))
try:
    next(iter([]))
except StopIteration:
    print("empty")
print(sum(Counter3()), [x for x in Counter3()])

class V:
    def __init__(self, x):
        self.x = x
    def __add__(self, o):
        if not isinstance(o, V):
            return NotImplemented
        return V(self.x + o.x)
    def __radd__(self, o):
        return V(self.x + o)
    def __repr__(self):
        return "V(" + str(self.x) + ")"
print(V(1) + V(2), 5 + V(1), sum([V(1), V(2)]))

def deco(cls):
    cls.tag = "decorated"
    return cls

@deco
class Tagged(object):
    pass
print(Tagged.tag, type(Tagged()).__name__)

load({}, "momentum")
