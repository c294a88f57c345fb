# User-defined descriptors (__get__, __set__, __delete__), a class's __dict__,
# deleting list slices, and ast.literal_eval.
from ast import literal_eval


class cached:
    # A non-data descriptor: once the value is stored on the instance, the
    # instance's own attribute wins.
    def __init__(self, fn):
        self.fn = fn
        self.calls = 0

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        self.calls += 1
        value = self.fn(instance)
        setattr(instance, self.fn.__name__, value)
        return value


class Positive:
    # A data descriptor: it wins over the instance's dict, reads and writes.
    def __set_name__(self, owner, name):
        self.name = name

    def __init__(self, name):
        self.name = name

    def __get__(self, instance, owner=None):
        if instance is None:
            return "Positive(" + self.name + ") on " + owner.__name__
        return instance.__dict__.get("_" + self.name, 0)

    def __set__(self, instance, value):
        if value <= 0:
            raise ValueError(self.name + " must be positive, got " + str(value))
        instance.__dict__["_" + self.name] = value


class Box:
    width = Positive("width")

    def __init__(self, w):
        self.width = w

    @cached
    def area(self):
        print("computing area")
        return self.width * self.width


b = Box(3)
print(b.width, b.area, b.area, Box.area.calls)
print("area" in b.__dict__, sorted(b.__dict__))
print(Box.width)
try:
    b.width = -1
except ValueError as e:
    print("ValueError:", e)
b.width = 5
print(b.width, b.area)
del b.area
print(b.area, Box.area.calls)
print(isinstance(Box.__dict__["area"], cached), "width" in Box.__dict__)


class Sub(Box):
    pass


s = Sub(2)
print(s.width, s.area, "width" in Sub.__dict__)

items = list(range(10))
del items[2:5]
print(items)
del items[::2]
print(items)
del items[-2:]
print(items)
del items[:]
print(items)
nested = [[1, 2], [3, 4]]
del nested[0][1:]
print(nested)

for text in ["3", "  -2.5", "[1, (2, 'a'), {'k': None}]", "{1, 2}", "set()", "True", "0x10", "-(3)",
             "(1,)", "{'lr': 0.1, 'betas': (0.9, 0.95)}", "10000000000000000000000", "1e-3", "...",
             "2**3", "foo", "'x' + 'y'", "3 + 4", "f'{1}'", "[x for x in y]", "{**a}"]:
    try:
        value = literal_eval(text)
        print(repr(text), "->", repr(value), type(value).__name__)
    except ValueError as e:
        message = str(e)
        print(repr(text), "-> ValueError:", message[:message.index(" object")] if " object" in message else message)
try:
    literal_eval("1 +")
except SyntaxError:
    print("SyntaxError")
