// set and frozenset: Python source run when a VM starts, over an
// insertion-ordered dict. CPython orders a set by hash slots, so a set printed
// or iterated here lists its items in insertion order where CPython's order may
// differ (sorted(s) agrees). Set displays and comprehensions build these
// (Op::BuildSet). As a convenience for dict views, a list on the left of
// - | & ^ with a set on the right is taken as a set.
#include "core/python/compiler.h"
#include "core/python/prelude.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kSetsSource = R"PY(
class frozenset:
    def __init__(self, iterable=()):
        d = {}
        for x in iterable:
            d[x] = None
        self._d = d

    def _new(self, items):
        return type(self)(items)

    def __len__(self):
        return len(self._d)

    def __iter__(self):
        return iter(list(self._d))

    def __contains__(self, x):
        return x in self._d

    def __repr__(self):
        name = type(self).__name__
        if len(self._d) == 0:
            return name + "()"
        body = "{" + ", ".join([repr(x) for x in self._d]) + "}"
        return body if name == "set" else name + "(" + body + ")"

    def __eq__(self, other):
        if not isinstance(other, frozenset):
            return False
        return len(self._d) == len(other._d) and self.issubset(other)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __le__(self, other):
        return self.issubset(other)

    def __lt__(self, other):
        return len(self._d) < len(other._d) and self.issubset(other)

    def __ge__(self, other):
        return self.issuperset(other)

    def __gt__(self, other):
        return len(self._d) > len(other._d) and self.issuperset(other)

    def copy(self):
        return self._new(self._d)

    def issubset(self, other):
        for x in self._d:
            if x not in other:
                return False
        return True

    def issuperset(self, other):
        for x in other:
            if x not in self._d:
                return False
        return True

    def isdisjoint(self, other):
        for x in other:
            if x in self._d:
                return False
        return True

    def union(self, *others):
        d = dict(self._d)
        for o in others:
            for x in o:
                d[x] = None
        return self._new(d)

    def intersection(self, *others):
        items = list(self._d)
        for o in others:
            keep = o if isinstance(o, frozenset) else frozenset(o)
            items = [x for x in items if x in keep]
        return self._new(items)

    def difference(self, *others):
        items = list(self._d)
        for o in others:
            drop = o if isinstance(o, frozenset) else frozenset(o)
            items = [x for x in items if x not in drop]
        return self._new(items)

    def symmetric_difference(self, other):
        other = other if isinstance(other, frozenset) else frozenset(other)
        return self._new([x for x in self._d if x not in other] + [x for x in other if x not in self._d])

    def _check(self, other, op):
        if not isinstance(other, frozenset):
            raise TypeError("unsupported operand type(s) for " + op + ": '" + type(self).__name__ + "' and '" +
                            type(other).__name__ + "'")

    def __or__(self, other):
        self._check(other, "|")
        return self.union(other)

    def __and__(self, other):
        self._check(other, "&")
        return self.intersection(other)

    def __sub__(self, other):
        self._check(other, "-")
        return self.difference(other)

    def __xor__(self, other):
        self._check(other, "^")
        return self.symmetric_difference(other)

    def __ror__(self, other):
        return self._new(other).union(self)

    def __rand__(self, other):
        return self._new(other).intersection(self)

    def __rsub__(self, other):
        return self._new(other).difference(self)

    def __rxor__(self, other):
        return self._new(other).symmetric_difference(self)


class set(frozenset):
    def add(self, x):
        self._d[x] = None

    def discard(self, x):
        if x in self._d:
            del self._d[x]

    def remove(self, x):
        if x not in self._d:
            raise KeyError(x)
        del self._d[x]

    def pop(self):
        if len(self._d) == 0:
            raise KeyError("pop from an empty set")
        x = list(self._d)[0]
        del self._d[x]
        return x

    def clear(self):
        self._d = {}

    def update(self, *others):
        for o in others:
            for x in o:
                self._d[x] = None

    def intersection_update(self, *others):
        self._d = self.intersection(*others)._d

    def difference_update(self, *others):
        self._d = self.difference(*others)._d

    def symmetric_difference_update(self, other):
        self._d = self.symmetric_difference(other)._d

    def __ior__(self, other):
        self._check(other, "|=")
        self.update(other)
        return self

    def __iand__(self, other):
        self._check(other, "&=")
        self.intersection_update(other)
        return self

    def __isub__(self, other):
        self._check(other, "-=")
        self.difference_update(other)
        return self

    def __ixor__(self, other):
        self._check(other, "^=")
        self.symmetric_difference_update(other)
        return self
)PY";

}  // namespace

void install_sets(VM& vm) {
  static const Expected<CodePtr> code = compile_module(kSetsSource, "<builtins>");
  Ref<Dict> ns = run_prelude(vm, code, "builtins", "sets");
  if (!ns) return;
  ns->for_each([&](const Value& k, const Value& v) {
    if (!v.is(ObjKind::Class)) return;
    v.as<Class>()->module = "builtins";
    vm.builtins()->set(k, v);
    vm.register_type(Ref<Class>(v.as<Class>()));
  });
}

}  // namespace kiln::py
