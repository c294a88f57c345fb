# A bare raise keeps the traceback of the first raise; `raise e` adds the
# line that raised it again; finally and an unmatched except re-raise.
def parse(text):
    return int(text)

def read_all(items):
    out = []
    for t in items:
        try:
            out.append(parse(t))
        except ValueError:
            print("cannot parse", repr(t))
            raise
    return out

def keep(items):
    try:
        return read_all(items)
    finally:
        print("cleanup")

try:
    keep(["1", "x"])
except ValueError as e:
    saved = e
    print("first:", e)

def again():
    try:
        raise saved
    except TypeError:
        print("not a TypeError")

again()
