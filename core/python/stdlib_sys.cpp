// sys, os, os.path and time. What touches the host (files, processes, the
// environment) is refused or empty; the rest follows CPython 3.12.
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <thread>

#include <unistd.h>

#include "core/python/compiler.h"
#include "core/python/stdlib.h"
#include "core/python/vm.h"

namespace kiln::py {

namespace {

const char* const kSysSource = R"PY(# sys, after CPython 3.12's: the parts a program reads.
import _kiln_std


class _TextStream:
    def __init__(self, name, write):
        self.name = name
        self._write = write

    def write(self, s):
        if not isinstance(s, str):
            _kiln_std.raise_error("TypeError", "write() argument must be str, not " + type(s).__name__)
        self._write(s)
        return len(s)

    def flush(self):
        pass

    def isatty(self):
        return False

    def __repr__(self):
        return "<_io.TextIOWrapper name='<" + self.name + ">' mode='w' encoding='utf-8'>"


def exit(status=None):
    raise SystemExit(status)


stdout = _TextStream("stdout", _write_out)
stderr = _TextStream("stderr", _write_err)
__stdout__ = stdout
__stderr__ = stderr
)PY";

void refuse_host(const Ref<Module>& m, std::initializer_list<const char*> names, const std::string& why) {
  for (const char* n : names) {
    std::string qualified = m->name + "." + n;
    def_native(m, n, [qualified, why](VM&, const CallArgs&) -> Value {
      throw_unsupported(qualified + "() is outside Kiln's Python subset (" + why + ")");
    });
  }
}

const char* const kOsPathSource = R"PY(# os.path: CPython 3.12's posixpath, its pure functions.
import _kiln_std

sep = "/"
curdir = "."
pardir = ".."
extsep = "."


def _rfind(s, ch):
    i = len(s) - 1
    while i >= 0:
        if s[i] == ch:
            return i
        i -= 1
    return -1


def _check(p, fn):
    if not isinstance(p, str):
        _kiln_std.raise_error("TypeError", fn + "() argument must be str, not " + type(p).__name__)


def join(a, *p):
    _check(a, "join")
    path = a
    for b in p:
        _check(b, "join")
        if b.startswith("/"):
            path = b
        elif not path or path.endswith("/"):
            path += b
        else:
            path += "/" + b
    return path


def split(p):
    i = _rfind(p, "/") + 1
    head, tail = p[:i], p[i:]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head, tail


def basename(p):
    return p[_rfind(p, "/") + 1:]


def dirname(p):
    head = p[:_rfind(p, "/") + 1]
    if head and head != "/" * len(head):
        head = head.rstrip("/")
    return head


def splitext(p):
    sep_index = _rfind(p, "/")
    dot_index = _rfind(p, ".")
    if dot_index > sep_index:
        filename_index = sep_index + 1
        while filename_index < dot_index:
            if p[filename_index] != ".":
                return p[:dot_index], p[dot_index:]
            filename_index += 1
    return p, p[:0]


def isabs(s):
    return s.startswith("/")


def normpath(path):
    if path == "":
        return "."
    initial_slashes = 1 if path.startswith("/") else 0
    if initial_slashes and path.startswith("//") and not path.startswith("///"):
        initial_slashes = 2
    comps = path.split("/")
    new_comps = []
    for comp in comps:
        if comp == "" or comp == ".":
            continue
        if comp != ".." or (not initial_slashes and not new_comps) or (new_comps and new_comps[-1] == ".."):
            new_comps.append(comp)
        elif new_comps:
            new_comps.pop()
    path = "/".join(new_comps)
    if initial_slashes:
        path = "/" * initial_slashes + path
    return path or "."
)PY";

double now_s(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

void load_sys(VM& vm, const Ref<Module>& m) {
  ValueVec argv;
  for (const std::string& a : vm.options().argv) argv.push_back(str_value(a));
  if (argv.empty()) {
    Ref<Module> main = vm.module("__main__");
    const Value* file = main ? main->dict->find_str("__file__") : nullptr;
    argv.push_back(file ? *file : str_value(""));
  }
  auto set = [&](const char* name, Value v) { m->dict->set(str_value(name), std::move(v)); };
  set("argv", list_value(std::move(argv)));
  set("version_info", tuple_value({Value(int64_t(3)), Value(int64_t(12)), Value(int64_t(0)), str_value("final"), Value(int64_t(0))}));
  set("version", str_value("3.12.0 (Kiln's Python subset)"));
  set("hexversion", Value(int64_t(0x030C00F0)));
  set("maxsize", Value(int64_t(INT64_MAX)));
  set("platform", str_value("linux"));
  set("byteorder", str_value("little"));
  set("path", list_value({}));
  set("executable", str_value(""));
  def_native(m, "getrecursionlimit", [](VM& vm, const CallArgs&) { return Value(int64_t(vm.options().max_depth)); });
  // The limit is the VM's (--max-depth); a program raising it changes nothing.
  def_native(m, "setrecursionlimit", [](VM&, const CallArgs&) { return Value(); });
  // The exception an except clause (or a finally running for one) is handling, seen from any frame it calls.
  def_native(m, "exception", [](VM& vm, const CallArgs&) { return vm.handled_exception(); });
  def_native(m, "exc_info", [](VM& vm, const CallArgs&) {
    Value e = vm.handled_exception();
    if (e.is_none()) return tuple_value({Value(), Value(), Value()});
    // Tracebacks are not objects in the subset: the third item is None.
    return tuple_value({Value(vm.type_of(e)), e, Value()});
  });
  def_native(m, "_write_out", [](VM& vm, const CallArgs& a) {
    vm.write_out(as_str(a[0]));
    return Value();
  });
  def_native(m, "_write_err", [](VM& vm, const CallArgs& a) {
    vm.write_err(as_str(a[0]));
    return Value();
  });
  static const Expected<CodePtr> code = compile_module(kSysSource, "sys.py");
  run_module_source(vm, m, code);
}

void load_os(VM& vm, const Ref<Module>& m) {
  auto set = [&](const char* name, Value v) { m->dict->set(str_value(name), std::move(v)); };
  set("path", Value(vm.module("os.path")));
  set("sep", str_value("/"));
  set("linesep", str_value("\n"));
  set("pathsep", str_value(":"));
  set("curdir", str_value("."));
  set("pardir", str_value(".."));
  set("name", str_value("posix"));
  set("devnull", str_value("/dev/null"));
  // The program sees an empty environment: the host's is not its to read.
  set("environ", Value(make<Dict>()));
  def_native(m, "getenv", [](VM& vm, const CallArgs& a) -> Value {
    Value* environ = vm.module("os")->dict->find(str_value("environ"));
    if (environ && environ->is(ObjKind::Dict))
      if (const Value* v = environ->as<Dict>()->find(a[0])) return *v;
    return a.npos > 1 ? a[1] : Value();
  });
  // The process id is no file, process or host content; hogwild-style
  // programs print it beside their losses.
  def_native(m, "getpid", [](VM&, const CallArgs&) { return Value(int64_t(::getpid())); });
  refuse_host(m, {"system", "popen", "listdir", "makedirs", "mkdir", "remove", "unlink", "rmdir", "rename", "replace", "walk",
                  "scandir", "stat", "chdir", "getcwd", "kill", "fork", "execv", "execvp", "spawnv", "open",
                  "cpu_count", "urandom"},
              "programs cannot touch files, processes or the host");
}

void load_os_path(VM& vm, const Ref<Module>& m) {
  refuse_host(m, {"lexists", "islink", "getmtime", "expanduser", "expandvars", "samefile"},
              "programs cannot look at files");
  // exists / isfile / isdir / getsize answer for paths inside the folders the
  // command allows (--allow-read, --allow-write); elsewhere they are refused,
  // since the answer would tell the program about the host.
  auto probe = [](const char* name, auto answer) {
    return [name, answer](VM& vm, const CallArgs& a) -> Value {
      if (a.npos != 1 || !a[0].is(ObjKind::Str)) throw_type_error(std::string(name) + "() takes one path string");
      const std::string& path = a[0].as<Str>()->s;
      std::string resolved;
      try {
        resolved = program_file_path(vm, path, /*write=*/false);
      } catch (PyError&) {
        throw_unsupported(std::string("os.path.") + name + "('" + path +
                          "') is outside the folders this run may read (--allow-read DIR allows one)");
      }
      std::error_code ec;
      return answer(std::filesystem::path(resolved), ec);
    };
  };
  def_native(m, "exists", probe("exists", [](const std::filesystem::path& p, std::error_code& ec) {
               return Value(std::filesystem::exists(p, ec));
             }));
  def_native(m, "isfile", probe("isfile", [](const std::filesystem::path& p, std::error_code& ec) {
               return Value(std::filesystem::is_regular_file(p, ec));
             }));
  def_native(m, "isdir", probe("isdir", [](const std::filesystem::path& p, std::error_code& ec) {
               return Value(std::filesystem::is_directory(p, ec));
             }));
  def_native(m, "getsize", probe("getsize", [](const std::filesystem::path& p, std::error_code& ec) -> Value {
               auto size = std::filesystem::file_size(p, ec);
               if (ec) throw PyError("FileNotFoundError", "[Errno 2] No such file or directory: '" + p.string() + "'");
               return Value(int64_t(size));
             }));
  // The absolute path names the host's folders: answered, like the probes,
  // only inside the folders the run may read.
  auto without_trailing_slash = [](std::string s) {
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return Value(str_value(s));
  };
  def_native(m, "realpath", probe("realpath", [without_trailing_slash](const std::filesystem::path& p, std::error_code&) {
               return without_trailing_slash(p.string());
             }));
  def_native(m, "abspath", [probe, without_trailing_slash](VM& vm, const CallArgs& a) -> Value {
    probe("abspath", [](const std::filesystem::path&, std::error_code&) { return Value(); })(vm, a);
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(a[0].as<Str>()->s, ec);
    return without_trailing_slash(absolute.lexically_normal().string());
  });
  static const Expected<CodePtr> code = compile_module(kOsPathSource, "posixpath.py");
  run_module_source(vm, m, code);
}

void load_time(VM&, const Ref<Module>& m) {
  def_native(m, "time", [](VM&, const CallArgs&) { return Value(now_s(std::chrono::system_clock::now())); });
  def_native(m, "time_ns", [](VM&, const CallArgs&) {
    return Value(int64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count()));
  });
  for (const char* name : {"perf_counter", "monotonic", "process_time"})
    def_native(m, name, [](VM&, const CallArgs&) { return Value(double(steady_ns()) * 1e-9); });
  for (const char* name : {"perf_counter_ns", "monotonic_ns", "process_time_ns"})
    def_native(m, name, [](VM&, const CallArgs&) { return Value(steady_ns()); });
  // Sleeps in slices so that the time limit and cancellation still stop it.
  def_native(m, "sleep", [](VM& vm, const CallArgs& a) {
    if (a.npos != 1) throw_type_error("time.sleep() takes exactly one argument (" + std::to_string(a.npos) + " given)");
    double secs = to_double(a[0], "time.sleep()");
    if (std::isnan(secs)) throw PyError("ValueError", "Invalid value NaN (not a number)");
    if (secs < 0) throw PyError("ValueError", "sleep length must be non-negative");
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(secs));
    while (std::chrono::steady_clock::now() < end) {
      vm.check_deadline();
      auto left = std::chrono::duration_cast<std::chrono::nanoseconds>(end - std::chrono::steady_clock::now());
      std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(left, std::chrono::milliseconds(20)));
    }
    return Value();
  });
  def_native(m, "strftime", [](VM&, const CallArgs& a) {
    if (a.npos != 1) throw_unsupported("time.strftime() with a time tuple (Kiln formats the current local time only)");
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[512];
    size_t n = std::strftime(buf, sizeof buf, as_str(a[0]).c_str(), &tm);
    return str_value(std::string(buf, n));
  });
}

}  // namespace kiln::py
