#pragma once
// The standard-library modules of the subset (`import argparse`, `typing`,
// `random`, ...). Each is made the first time a program imports it
// (load_stdlib_module, vm.h), so a VM that never imports one never pays for
// it. Most are Python source in the subset, compiled once per process and run
// with the module's dict as globals; the parts the subset cannot express
// (the clock, the Mersenne Twister, frames) are native builtins.
#include <string>

#include "core/python/code.h"
#include "core/python/object.h"
#include "core/util/status.h"

namespace kiln::py {

class VM;

// Runs compiled module source with `m`'s dict as its globals. A module that
// does not compile is Kiln's bug, raised as a SystemError naming it.
void run_module_source(VM& vm, const Ref<Module>& m, const Expected<CodePtr>& code);

// Defines loader `fn` running Python `source`, compiled once per process
// (code objects are immutable and shared).
#define KILN_STDLIB_SOURCE(fn, source, file)                                   \
  void fn(VM& vm, const Ref<Module>& m) {                                       \
    static const Expected<CodePtr> code = compile_module(source, file);        \
    run_module_source(vm, m, code);                                             \
  }

// Adds a native function `m.name` (qualified "module.name" in messages).
void def_native(const Ref<Module>& m, const std::string& name, BuiltinFn fn);

// Loaders: fill a freshly registered module.
void load_kiln_std(VM& vm, const Ref<Module>& m);     // _kiln_std: natives the Python sources share
void load_sys(VM& vm, const Ref<Module>& m);          // stdlib_sys.cpp
void load_os(VM& vm, const Ref<Module>& m);
void load_os_path(VM& vm, const Ref<Module>& m);
void load_time(VM& vm, const Ref<Module>& m);
void load_random(VM& vm, const Ref<Module>& m);       // stdlib_random.cpp
void load_codecs(VM& vm, const Ref<Module>& m);       // stdlib_codecs.cpp: unicode_escape and rot13 on str
void load_csv(VM& vm, const Ref<Module>& m);          // stdlib_csv.cpp: reader/writer over lines and write()
void load_re(VM& vm, const Ref<Module>& m);           // stdlib_re.cpp: re over RE2
void load_future(VM& vm, const Ref<Module>& m);       // stdlib_typing.cpp
void load_typing(VM& vm, const Ref<Module>& m);
void load_abc(VM& vm, const Ref<Module>& m);
void load_enum(VM& vm, const Ref<Module>& m);
void load_inspect(VM& vm, const Ref<Module>& m);       // stdlib_dataclasses.cpp
void load_dataclasses(VM& vm, const Ref<Module>& m);
void load_datetime(VM& vm, const Ref<Module>& m);    // stdlib_datetime.cpp
void load_warnings(VM& vm, const Ref<Module>& m);     // stdlib_warnings.cpp
void load_traceback(VM& vm, const Ref<Module>& m);    // stdlib_traceback.cpp
void load_collections(VM& vm, const Ref<Module>& m);  // stdlib_collections.cpp
void load_collections_abc(VM& vm, const Ref<Module>& m);  // stdlib_collections_abc.cpp
void load_functools(VM& vm, const Ref<Module>& m);
void load_itertools(VM& vm, const Ref<Module>& m);    // stdlib_itertools.cpp
void load_copy(VM& vm, const Ref<Module>& m);
void load_argparse(VM& vm, const Ref<Module>& m);     // stdlib_argparse.cpp
void load_ast(VM& vm, const Ref<Module>& m);          // stdlib_ast.cpp: literal_eval
void load_logging(VM& vm, const Ref<Module>& m);     // stdlib_logging.cpp
void load_operator(VM& vm, const Ref<Module>& m);    // stdlib_operator.cpp
void load_contextlib(VM& vm, const Ref<Module>& m);
void load_json(VM& vm, const Ref<Module>& m);        // stdlib_json.cpp
void load_string(VM& vm, const Ref<Module>& m);      // stdlib_small.cpp
void load_bisect(VM& vm, const Ref<Module>& m);
void load_heapq(VM& vm, const Ref<Module>& m);
void load_fnmatch(VM& vm, const Ref<Module>& m);
void load_types(VM& vm, const Ref<Module>& m);        // stdlib_types.cpp
void load_importlib(VM& vm, const Ref<Module>& m);    // stdlib_types.cpp: import_module
void load_einops(VM& vm, const Ref<Module>& m);        // stdlib_einops.cpp: einops over torch
void load_einops_layers(VM& vm, const Ref<Module>& m);
void load_einops_layers_torch(VM& vm, const Ref<Module>& m);
void load_tqdm(VM& vm, const Ref<Module>& m);          // stdlib_small.cpp: tqdm without its bar (stderr)
void load_unicodedata(VM& vm, const Ref<Module>& m);  // stdlib_unicodedata.cpp
void load_struct(VM& vm, const Ref<Module>& m);       // stdlib.cpp: importable, calls refused (no bytes)
void load_io(VM& vm, const Ref<Module>& m);           // stdlib_io.cpp
void load_pickle(VM& vm, const Ref<Module>& m);       // importable; load/dump refused
void load_glob(VM& vm, const Ref<Module>& m);         // importable; glob/iglob refused
void load_numpy(VM& vm, const Ref<Module>& m);        // numpy_prelude.cpp: Kiln's NumPy subset
void load_numpy_random(VM& vm, const Ref<Module>& m); // numpy_prelude.cpp: the legacy RandomState
void load_kiln_numpy(VM& vm, const Ref<Module>& m);   // numpy_native.cpp: its native parts
void load_refused(VM& vm, const Ref<Module>& m);      // subprocess, socket, shutil: every attribute refused

}  // namespace kiln::py
