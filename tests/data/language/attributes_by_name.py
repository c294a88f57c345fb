# delattr beside getattr/setattr/hasattr (pruning code removes the tensor it recomputes with
# delattr), its errors, and the default repr of an instance: module, qualified name and address.
class Holder:
    class Inner:
        pass

    def __init__(self):
        self.weight = 3


h = Holder()
setattr(h, "bias", 4)
print(getattr(h, "weight"), hasattr(h, "bias"))
delattr(h, "weight")
print(hasattr(h, "weight"), getattr(h, "weight", "gone"), sorted(vars(h)))
try:
    delattr(h, "weight")
except AttributeError as e:
    print("AttributeError:", e)
try:
    delattr(h, 5)
except TypeError as e:
    print("TypeError:", e)
text = repr(h)
print(text.startswith("<__main__.Holder object at 0x"), text.endswith(">"), str(h) == text)
print(repr(Holder.Inner()).startswith("<__main__.Holder.Inner object at 0x"))
