# Wrong-argument TypeErrors name functions by their qualified names, as CPython 3.10+.
class C:
    def b(self, x):
        return x

    def kw(self, *, k):
        return k

    class Inner:
        def m(self):
            pass


def f(a, b=1):
    return a


def outer():
    def inner(x):
        return x
    return inner


for call in [lambda: C().b(1, 2), lambda: C().b(), lambda: C().kw(), lambda: C().kw(k=1, j=2), lambda: C.Inner().m(1),
             lambda: f(1, 2, 3), lambda: f(), lambda: f(1, a=2), lambda: outer()(1, 2), lambda: C.b(1, 2, x=3)]:
    try:
        call()
    except TypeError as e:
        print(e)
