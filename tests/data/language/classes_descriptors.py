# staticmethod, classmethod, property, instance __dict__, super(Cls, self).
class Shape(object):
    count = 0

    def __init__(self, w, h):
        self._w = w
        self.h = h
        Shape.count += 1

    @property
    def w(self):
        return self._w

    @w.setter
    def w(self, value):
        if value < 0:
            raise ValueError("negative width")
        self._w = value

    @property
    def area(self):
        return self._w * self.h

    @staticmethod
    def unit():
        return Shape(1, 1)

    @classmethod
    def square(cls, n):
        return cls(n, n)

    def __repr__(self):
        return "%s(%d, %d)" % (type(self).__name__, self._w, self.h)


class Box(Shape):
    def __init__(self, w, h, d):
        super(Box, self).__init__(w, h)
        self.d = d

    @property
    def area(self):
        return super().area * self.d

    @classmethod
    def cube(cls, n):
        return cls(n, n, n)


s = Shape(2, 3)
print(s.w, s.area, Shape.unit(), Shape.square(4), Shape.count)
s.w = 5
print(s.w, s.area, sorted(s.__dict__.items()))
try:
    s.w = -1
except ValueError as e:
    print("rejected:", e)
try:
    s.area = 3
except AttributeError as e:
    print("read-only:", type(e).__name__)
b = Box.cube(2)
print(b, b.area, isinstance(Box.cube(1), Shape), Shape.count)
print(type(Shape.__dict__ if False else s.__dict__).__name__, "h" in s.__dict__)
s.__dict__["h"] = 10
print(s.h, s.area)
print(Shape.w.fget(s), isinstance(Shape.w, property))


# super().__init__() reaches object's when no base defines one.
class Plain:
    def __init__(self, x):
        super().__init__()
        self.x = x


class Derived(Plain):
    def __init__(self):
        super(Derived, self).__init__(7)


print(Derived().x, type(Plain(1)).__name__)
