// string, bisect, heapq and fnmatch: small pure modules, Python source in the
// subset after CPython 3.12's Lib/string.py, bisect.py, heapq.py and fnmatch.py (the same sift
// order, so heaps hold their items in CPython's order).
#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kStringSource = R"PY(# string's constants and capwords.
whitespace = " \t\n\r\v\f"
ascii_lowercase = "abcdefghijklmnopqrstuvwxyz"
ascii_uppercase = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
ascii_letters = ascii_lowercase + ascii_uppercase
digits = "0123456789"
hexdigits = digits + "abcdef" + "ABCDEF"
octdigits = "01234567"
punctuation = r"""!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~"""
printable = digits + ascii_letters + punctuation + whitespace


def capwords(s, sep=None):
    return (sep or " ").join([x.capitalize() for x in s.split(sep)])
)PY";

const char* const kBisectSource = R"PY(# bisect.
def bisect_right(a, x, lo=0, hi=None, *, key=None):
    if lo < 0:
        raise ValueError("lo must be non-negative")
    if hi is None:
        hi = len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if x < (a[mid] if key is None else key(a[mid])):
            hi = mid
        else:
            lo = mid + 1
    return lo


def bisect_left(a, x, lo=0, hi=None, *, key=None):
    if lo < 0:
        raise ValueError("lo must be non-negative")
    if hi is None:
        hi = len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if (a[mid] if key is None else key(a[mid])) < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def insort_right(a, x, lo=0, hi=None, *, key=None):
    lo = bisect_right(a, x if key is None else key(x), lo, hi, key=key)
    a.insert(lo, x)


def insort_left(a, x, lo=0, hi=None, *, key=None):
    lo = bisect_left(a, x if key is None else key(x), lo, hi, key=key)
    a.insert(lo, x)


bisect = bisect_right
insort = insort_right
)PY";

const char* const kHeapqSource = R"PY(# heapq, CPython's pure-Python algorithms.
def _siftdown(heap, startpos, pos):
    newitem = heap[pos]
    while pos > startpos:
        parentpos = (pos - 1) >> 1
        parent = heap[parentpos]
        if newitem < parent:
            heap[pos] = parent
            pos = parentpos
            continue
        break
    heap[pos] = newitem


def _siftup(heap, pos):
    endpos = len(heap)
    startpos = pos
    newitem = heap[pos]
    childpos = 2 * pos + 1
    while childpos < endpos:
        rightpos = childpos + 1
        if rightpos < endpos and not heap[childpos] < heap[rightpos]:
            childpos = rightpos
        heap[pos] = heap[childpos]
        pos = childpos
        childpos = 2 * pos + 1
    heap[pos] = newitem
    _siftdown(heap, startpos, pos)


def heappush(heap, item):
    heap.append(item)
    _siftdown(heap, 0, len(heap) - 1)


def heappop(heap):
    lastelt = heap.pop()
    if heap:
        returnitem = heap[0]
        heap[0] = lastelt
        _siftup(heap, 0)
        return returnitem
    return lastelt


def heapreplace(heap, item):
    returnitem = heap[0]
    heap[0] = item
    _siftup(heap, 0)
    return returnitem


def heappushpop(heap, item):
    if heap and heap[0] < item:
        item, heap[0] = heap[0], item
        _siftup(heap, 0)
    return item


def heapify(x):
    n = len(x)
    for i in reversed(range(n // 2)):
        _siftup(x, i)


def nsmallest(n, iterable, key=None):
    return sorted(iterable, key=key)[:n]


def nlargest(n, iterable, key=None):
    return sorted(iterable, key=key, reverse=True)[:n]


def merge(*iterables, key=None, reverse=False):
    items = []
    for it in iterables:
        items.extend(it)
    return iter(sorted(items, key=key, reverse=reverse))
)PY";

const char* const kFnmatchSource = R"PY(# fnmatch, CPython 3.12's translate. RE2 has no atomic groups, so the
# patterns matched here write translate's (?>.*?X) as (?:.*?X): with X of a
# fixed length followed by .*, the first match of X is the one an atomic
# group keeps, so both match the same names.
import re
import functools

__all__ = ["filter", "fnmatch", "fnmatchcase", "translate"]


def fnmatch(name, pat):
    return fnmatchcase(name, pat)


@functools.lru_cache(maxsize=32768)
def _compile_pattern(pat):
    return re.compile(_translate(pat, "(?:")).match


def filter(names, pat):
    result = []
    match = _compile_pattern(pat)
    for name in names:
        if match(name):
            result.append(name)
    return result


def fnmatchcase(name, pat):
    match = _compile_pattern(pat)
    return match(name) is not None


def translate(pat):
    return _translate(pat, "(?>")


def _translate(pat, group):
    STAR = None
    res = []
    add = res.append
    i, n = 0, len(pat)
    while i < n:
        c = pat[i]
        i = i + 1
        if c == "*":
            if (not res) or res[-1] is not STAR:
                add(STAR)
        elif c == "?":
            add(".")
        elif c == "[":
            j = i
            if j < n and pat[j] == "!":
                j = j + 1
            if j < n and pat[j] == "]":
                j = j + 1
            while j < n and pat[j] != "]":
                j = j + 1
            if j >= n:
                add("\\[")
            else:
                stuff = pat[i:j]
                if "-" not in stuff:
                    stuff = stuff.replace("\\", r"\\")
                else:
                    chunks = []
                    k = i + 2 if pat[i] == "!" else i + 1
                    while True:
                        k = pat.find("-", k, j)
                        if k < 0:
                            break
                        chunks.append(pat[i:k])
                        i = k + 1
                        k = k + 3
                    chunk = pat[i:j]
                    if chunk:
                        chunks.append(chunk)
                    else:
                        chunks[-1] += "-"
                    for k in range(len(chunks) - 1, 0, -1):
                        if chunks[k - 1][-1] > chunks[k][0]:
                            chunks[k - 1] = chunks[k - 1][:-1] + chunks[k][1:]
                            del chunks[k]
                    stuff = "-".join(s.replace("\\", r"\\").replace("-", r"\-") for s in chunks)
                stuff = re.sub(r"([&~|])", r"\\\1", stuff)
                i = j + 1
                if not stuff:
                    add("(?!)")
                elif stuff == "!":
                    add(".")
                else:
                    if stuff[0] == "!":
                        stuff = "^" + stuff[1:]
                    elif stuff[0] in ("^", "["):
                        stuff = "\\" + stuff
                    add("[" + stuff + "]")
        else:
            add(re.escape(c))
    inp = res
    res = []
    add = res.append
    i, n = 0, len(inp)
    while i < n and inp[i] is not STAR:
        add(inp[i])
        i += 1
    while i < n:
        i += 1
        if i == n:
            add(".*")
            break
        fixed = []
        while i < n and inp[i] is not STAR:
            fixed.append(inp[i])
            i += 1
        fixed = "".join(fixed)
        if i == n:
            add(".*")
            add(fixed)
        else:
            add(group + ".*?" + fixed + ")")
    return "(?s:" + "".join(res) + ")\\Z"
)PY";

}  // namespace

// tqdm, the progress bar model programs wrap their loops in: the bar itself
// goes to stderr in tqdm, so here it is not drawn at all; iteration, counts,
// update/close/set_description and tqdm.write (to stdout, as tqdm's) behave.
const char* const kTqdmSource = R"PY(# tqdm: iteration and bookkeeping without the bar.
class tqdm:
    def __init__(self, iterable=None, desc=None, total=None, leave=True, file=None, ncols=None,
                 mininterval=0.1, maxinterval=10.0, miniters=None, ascii=None, disable=False, unit="it",
                 unit_scale=False, dynamic_ncols=False, smoothing=0.3, bar_format=None, initial=0,
                 position=None, postfix=None, unit_divisor=1000, **kwargs):
        self.iterable = iterable
        self.desc = desc or ""
        if total is None and iterable is not None:
            try:
                total = len(iterable)
            except TypeError:
                total = None
        self.total = total
        self.n = initial
        self.disable = disable
        self.postfix = postfix

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.n += 1

    def __len__(self):
        if self.total is not None:
            return self.total
        return len(self.iterable)

    def __enter__(self):
        return self

    def __exit__(self, *args):
        return False

    def update(self, n=1):
        self.n += n
        return True

    def close(self):
        pass

    def refresh(self):
        pass

    def reset(self, total=None):
        self.n = 0
        if total is not None:
            self.total = total

    def set_description(self, desc=None, refresh=True):
        self.desc = desc or ""

    def set_description_str(self, desc=None, refresh=True):
        self.desc = desc or ""

    def set_postfix(self, ordered_dict=None, refresh=True, **kwargs):
        self.postfix = kwargs if ordered_dict is None else ordered_dict

    def set_postfix_str(self, s="", refresh=True):
        self.postfix = s

    @staticmethod
    def write(s, file=None, end="\n", nolock=False):
        if file is None:
            print(s, end=end)
        else:
            file.write(s + end)


def trange(*args, **kwargs):
    return tqdm(range(*args), **kwargs)
)PY";

KILN_STDLIB_SOURCE(load_string, kStringSource, "string.py")
KILN_STDLIB_SOURCE(load_tqdm, kTqdmSource, "tqdm/__init__.py")
KILN_STDLIB_SOURCE(load_bisect, kBisectSource, "bisect.py")
KILN_STDLIB_SOURCE(load_heapq, kHeapqSource, "heapq.py")
KILN_STDLIB_SOURCE(load_fnmatch, kFnmatchSource, "fnmatch.py")

}  // namespace kiln::py
