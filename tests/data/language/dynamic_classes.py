# type(name, bases, namespace) and assignment to __class__ between user classes (parametrizations
# swap a module's class for a generated subclass with a property); the errors CPython gives.
class Layer:
    def __init__(self):
        self.scale = 2

    def forward(self, x):
        return x * self.scale


Parametrized = type("ParametrizedLayer", (Layer,), {"weight": property(lambda self: self.scale * 10),
                                                   "kind": "generated"})
layer = Layer()
layer.__class__ = Parametrized
print(type(layer).__name__, layer.weight, layer.kind, layer.forward(3), isinstance(layer, Layer))
print(Parametrized.__name__, issubclass(Parametrized, Layer), type("Empty", (), {})().__class__.__name__)
layer.__class__ = Layer
print(type(layer).__name__, hasattr(layer, "weight"), vars(layer))
for bad in (3, int):
    try:
        layer.__class__ = bad
    except TypeError as e:
        print("TypeError:", e)
Counter = type("Counter", (), {"count": 0, "bump": lambda self: setattr(self, "count", self.count + 1) or self.count})
c = Counter()
print(c.bump(), c.bump(), Counter.count)
print([c.__name__ for c in Parametrized.__mro__], [c.__name__ for c in Parametrized.__bases__], Layer.__bases__, object.__bases__)
