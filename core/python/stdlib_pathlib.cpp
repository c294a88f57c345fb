// pathlib: the pure path arithmetic of CPython 3.12's PurePosixPath (parts,
// name/stem/suffix, parent, joining with / and joinpath, with_suffix, ...)
// on Path / PosixPath / PurePath too. What would look at the file system is
// os.path's: exists / is_file / is_dir / resolve / absolute answer inside the
// folders the run may read and are refused elsewhere (stdlib_sys.cpp); cwd,
// home, open, read_text, mkdir, iterdir, glob, ... are refused, as open() is.
#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kPathlibSource = R"PY(# pathlib: CPython 3.12's pure POSIX paths.
import _kiln_std
import os.path


def _parse(args):
    root = ""
    parts = []
    for a in args:
        if isinstance(a, PurePath):
            a = str(a)
        elif not isinstance(a, str):
            _kiln_std.raise_error("TypeError", "argument should be a str or an os.PathLike object where __fspath__ "
                                  "returns a str, not " + repr(type(a).__name__))
        if a.startswith("/"):
            # POSIX keeps exactly two leading slashes; one, or three and more, are one root.
            root = "//" if a.startswith("//") and not a.startswith("///") else "/"
            parts = []
        for p in a.split("/"):
            if p and p != ".":
                parts.append(p)
    return root, parts


class PurePath:
    def __init__(self, *args):
        root, parts = _parse(args)
        d = _kiln_std.instance_dict(self)
        d["_root"] = root
        d["_parts"] = parts

    @classmethod
    def _make(cls, root, parts):
        p = _kiln_std.new_instance(cls)
        d = _kiln_std.instance_dict(p)
        d["_root"] = root
        d["_parts"] = list(parts)
        return p

    def __str__(self):
        return (self._root + "/".join(self._parts)) or "."

    def __fspath__(self):
        return str(self)

    def as_posix(self):
        return str(self)

    def __repr__(self):
        # Path(...) is a PosixPath on Linux (the subset's classes cannot pick their class in __new__).
        name = type(self).__name__
        return ("PosixPath" if name == "Path" else name) + "(" + repr(self.as_posix()) + ")"

    def __eq__(self, other):
        return isinstance(other, PurePath) and str(self) == str(other)

    def __ne__(self, other):
        return not self.__eq__(other)

    def __hash__(self):
        return hash(str(self))

    def __lt__(self, other):
        return self.parts < other.parts

    def __le__(self, other):
        return self.parts <= other.parts

    def __gt__(self, other):
        return self.parts > other.parts

    def __ge__(self, other):
        return self.parts >= other.parts

    def __truediv__(self, key):
        if not isinstance(key, (str, PurePath)):
            return NotImplemented
        return self.joinpath(key)

    def __rtruediv__(self, key):
        if not isinstance(key, (str, PurePath)):
            return NotImplemented
        return type(self)(key, self)

    def joinpath(self, *others):
        return type(self)(self, *others)

    @property
    def parts(self):
        return tuple(([self._root] if self._root else []) + self._parts)

    @property
    def root(self):
        return self._root

    @property
    def anchor(self):
        return self._root

    @property
    def drive(self):
        return ""

    @property
    def name(self):
        return self._parts[-1] if self._parts else ""

    @property
    def suffix(self):
        name = self.name
        i = name.rfind(".")
        if 0 < i < len(name) - 1:
            return name[i:]
        return ""

    @property
    def suffixes(self):
        name = self.name
        if name.endswith("."):
            return []
        name = name.lstrip(".")
        return ["." + s for s in name.split(".")[1:]]

    @property
    def stem(self):
        name = self.name
        i = name.rfind(".")
        if 0 < i < len(name) - 1:
            return name[:i]
        return name

    @property
    def parent(self):
        if not self._parts:
            return self
        return type(self)._make(self._root, self._parts[:-1])

    @property
    def parents(self):
        out = []
        p = self
        while p._parts:
            p = p.parent
            out.append(p)
        return tuple(out)

    def is_absolute(self):
        return bool(self._root)

    def with_name(self, name):
        if not self.name:
            _kiln_std.raise_error("ValueError", repr(self) + " has an empty name")
        if not name or "/" in name or name == ".":
            _kiln_std.raise_error("ValueError", "Invalid name " + repr(name))
        return type(self)._make(self._root, self._parts[:-1] + [name])

    def with_stem(self, stem):
        return self.with_name(stem + self.suffix)

    def with_suffix(self, suffix):
        if "/" in suffix or (suffix and (not suffix.startswith(".") or suffix == ".")):
            _kiln_std.raise_error("ValueError", "Invalid suffix " + repr(suffix))
        if not self.name:
            _kiln_std.raise_error("ValueError", repr(self) + " has an empty name")
        return type(self)._make(self._root, self._parts[:-1] + [self.stem + suffix])

    def relative_to(self, other, *others):
        other = type(self)(other, *others)
        n = len(other._parts)
        if other._root != self._root or self._parts[:n] != other._parts:
            _kiln_std.raise_error("ValueError", repr(str(self)) + " is not in the subpath of " + repr(str(other)))
        return type(self)._make("", self._parts[n:])

    def is_relative_to(self, other, *others):
        other = type(self)(other, *others)
        n = len(other._parts)
        return other._root == self._root and self._parts[:n] == other._parts


class PurePosixPath(PurePath):
    pass


def _refuse(what):
    _kiln_std.refuse("pathlib.Path." + what + " (it reads or writes the host's files; Kiln runs programs without "
                     "file access)")


class Path(PurePath):
    # What looks at a file goes through os.path, whose probes answer inside the folders the run may read.
    def exists(self):
        return os.path.exists(str(self))

    def is_file(self):
        return os.path.isfile(str(self))

    def is_dir(self):
        return os.path.isdir(str(self))

    @classmethod
    def cwd(cls):
        _refuse("cwd")

    @classmethod
    def home(cls):
        _refuse("home")

    def resolve(self, strict=False):
        resolved = os.path.realpath(str(self))
        if strict and not os.path.exists(resolved):
            _kiln_std.raise_error("FileNotFoundError", "[Errno 2] No such file or directory: '" + str(self) + "'")
        return type(self)(resolved)

    def absolute(self):
        return type(self)(os.path.abspath(str(self)))

    def expanduser(self):
        _refuse("expanduser")

    def open(self, *args, **kwargs):
        _refuse("open")

    def read_text(self, *args, **kwargs):
        _refuse("read_text")

    def read_bytes(self):
        _refuse("read_bytes")

    def write_text(self, *args, **kwargs):
        _refuse("write_text")

    def write_bytes(self, *args):
        _refuse("write_bytes")

    def mkdir(self, *args, **kwargs):
        _refuse("mkdir")

    def touch(self, *args, **kwargs):
        _refuse("touch")

    def unlink(self, *args, **kwargs):
        _refuse("unlink")

    def rmdir(self):
        _refuse("rmdir")

    def iterdir(self):
        _refuse("iterdir")

    def glob(self, pattern):
        _refuse("glob")

    def rglob(self, pattern):
        _refuse("rglob")

    def stat(self):
        _refuse("stat")

    def rename(self, target):
        _refuse("rename")

    def samefile(self, other):
        _refuse("samefile")


class PosixPath(Path):
    pass
)PY";

}  // namespace

KILN_STDLIB_SOURCE(load_pathlib, kPathlibSource, "pathlib.py")

}  // namespace kiln::py
