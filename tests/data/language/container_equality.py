# == on lists, tuples and dicts compares elements with == after identity: a
# class's __eq__ takes part (and its NotImplemented falls back to identity).
class P:
    def __init__(self, v):
        self.v = v

    def __eq__(self, other):
        return isinstance(other, P) and self.v == other.v


class Never:
    def __eq__(self, other):
        return NotImplemented


a, b = P(1), P(1)
print([a] == [b], (a, 2) == (b, 2), [a] != [b], [P(1)] == [P(2)], [[a]] == [[b]])
print({"k": a} == {"k": b}, {"k": a} != {"k": P(3)}, {"k": [a]} == {"k": [b]})
n = Never()
print([n] == [n], [n] == [Never()], [1, 2.0] == [1.0, 2], (1, (2, [3])) == (1, (2, [3])))
print(a in [b], P(5) in [a, b], [b].index(a), [a, b, P(2)].count(P(1)))
