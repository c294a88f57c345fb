// io: StringIO, an in-memory text file, after CPython 3.12's. Positions count
// the subset's str units (bytes of UTF-8), so text outside ASCII gives other
// positions than CPython's. Files (io.open, FileIO) stay refused, and BytesIO
// needs the bytes type the subset lacks.
#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kIoSource = R"PY(# io.StringIO.
import _kiln_std

SEEK_SET = 0
SEEK_CUR = 1
SEEK_END = 2


class UnsupportedOperation(OSError):
    pass


class StringIO:
    def __init__(self, initial_value="", newline="\n"):
        if initial_value is None:
            initial_value = ""
        if not isinstance(initial_value, str):
            raise TypeError("initial_value must be str or None, not " + type(initial_value).__name__)
        self._buf = initial_value
        self._pos = 0
        self.closed = False

    def _check(self):
        if self.closed:
            raise ValueError("I/O operation on closed file")

    def readable(self):
        self._check()
        return True

    def writable(self):
        self._check()
        return True

    def seekable(self):
        self._check()
        return True

    def write(self, s):
        self._check()
        if not isinstance(s, str):
            raise TypeError("string argument expected, got '" + type(s).__name__ + "'")
        buf = self._buf
        pos = self._pos
        if pos > len(buf):
            buf = buf + "\0" * (pos - len(buf))
        self._buf = buf[:pos] + s + buf[pos + len(s):]
        self._pos = pos + len(s)
        return len(s)

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def read(self, size=-1):
        self._check()
        start = min(self._pos, len(self._buf))
        end = len(self._buf) if size is None or size < 0 else min(len(self._buf), start + size)
        self._pos = max(self._pos, end)
        return self._buf[start:end]

    def readline(self, size=-1):
        self._check()
        start = min(self._pos, len(self._buf))
        nl = self._buf.find("\n", start)
        end = len(self._buf) if nl < 0 else nl + 1
        if size is not None and size >= 0:
            end = min(end, start + size)
        self._pos = max(self._pos, end)
        return self._buf[start:end]

    def readlines(self, hint=-1):
        lines = []
        total = 0
        while True:
            line = self.readline()
            if not line:
                return lines
            lines.append(line)
            total += len(line)
            if hint is not None and 0 < hint <= total:
                return lines

    def __iter__(self):
        self._check()
        return self

    def __next__(self):
        line = self.readline()
        if not line:
            raise StopIteration
        return line

    def getvalue(self):
        self._check()
        return self._buf

    def tell(self):
        self._check()
        return self._pos

    def seek(self, pos, whence=0):
        self._check()
        if whence == 0:
            if pos < 0:
                raise ValueError("Negative seek position " + str(pos))
            self._pos = pos
        elif whence == 1:
            if pos != 0:
                raise OSError("Can't do nonzero cur-relative seeks")
        elif whence == 2:
            if pos != 0:
                raise OSError("Can't do nonzero end-relative seeks")
            self._pos = len(self._buf)
        else:
            raise ValueError("Invalid whence (" + str(whence) + ", should be 0, 1 or 2)")
        return self._pos

    def truncate(self, size=None):
        self._check()
        if size is None:
            size = self._pos
        if size < 0:
            raise ValueError("Negative size value " + str(size))
        self._buf = self._buf[:size]
        return size

    def flush(self):
        self._check()

    def isatty(self):
        self._check()
        return False

    def close(self):
        self.closed = True

    def __enter__(self):
        self._check()
        return self

    def __exit__(self, *args):
        self.close()
        return False


def open(*args, **kwargs):
    _kiln_std.refuse("io.open (Kiln's programs do not open files)")


def BytesIO(*args, **kwargs):
    _kiln_std.refuse("io.BytesIO (the subset has no bytes type)")
)PY";

}  // namespace

KILN_STDLIB_SOURCE(load_io, kIoSource, "io.py")

}  // namespace kiln::py
