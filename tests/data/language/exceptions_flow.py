def order(v):
    log = []
    try:
        log.append("body")
        if v == 1:
            raise ValueError("v is one")
        if v == 2:
            return "returned"
    except ValueError as e:
        log.append("except " + str(e))
    else:
        log.append("else")
    finally:
        log.append("finally")
    return log

for v in range(3):
    print(v, order(v))

def finally_wins():
    try:
        return 1
    finally:
        return 2
print(finally_wins())

def loop():
    out = []
    for i in range(6):
        try:
            if i % 2:
                continue
            if i == 4:
                break
            out.append(i)
        finally:
            out.append(-i)
    return out
print(loop())

def nested():
    try:
        try:
            [][1]
        except KeyError:
            print("not here")
        finally:
            print("inner finally")
    except LookupError as e:
        print("outer", type(e).__name__, e)
nested()

def swallow_in_finally():
    for i in range(2):
        try:
            raise RuntimeError(i)
        finally:
            continue
    return "done"
print(swallow_in_finally())

try:
    x = undefined_name
except NameError as e:
    print(e)
try:
    None.foo
except AttributeError as e:
    print(e)
try:
    "a" + 1
except TypeError as e:
    print(e)
try:
    [1, 2].index(5)
except ValueError as e:
    print(e)
try:
    {"a": 1}["b"]
except KeyError as e:
    print(repr(e), e.args[0])
try:
    raise KeyError((1, 2))
except KeyError as e:
    print(e)
try:
    1 // 0
except ArithmeticError as e:
    print(type(e).__name__, isinstance(e, ZeroDivisionError), isinstance(e, Exception))
try:
    int("q")
except:
    print("bare except")
try:
    raise TypeError
except TypeError as e:
    print(repr(e), e.args)
e = "still bound?"
try:
    raise ValueError("a", 2)
except ValueError as e:
    print(str(e), repr(e))
print("e" in dir() if False else "unbound check skipped")
