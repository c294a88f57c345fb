#include "app/cli/bench_gpu_model.h"

#include <cstdlib>
#include <filesystem>
#include <optional>

#include "compiler/capture/capture.h"
#include "compiler/capture/region_tracer.h"
#include "compiler/decomp/decompose.h"
#include "compiler/pipeline/to_aten.h"
#include "core/python/vm.h"

namespace kiln::cli {

namespace {

std::string find_program(const std::string& program) {
  namespace fs = std::filesystem;
  if (fs::exists(program)) return program;
  std::vector<fs::path> roots = {fs::current_path()};
  if (const char* src = std::getenv("KILN_SOURCE_DIR")) roots.emplace_back(src);
  for (const fs::path& root : roots)
    if (fs::exists(root / "resources/examples" / program)) return (root / "resources/examples" / program).string();
  return {};
}

}  // namespace

Expected<ModelGraph> capture_model_graph(const std::string& program, const std::vector<std::string>& args,
                                         const std::vector<std::string>& globals) {
  const std::string path = find_program(program);
  if (path.empty())
    return Status::error(program + " not found (give a path, or run from the repository root, or set KILN_SOURCE_DIR)");
  std::string err;
  py::VMOptions options;
  options.out = [](std::string_view) {};
  options.err = [&err](std::string_view s) { err += s; };
  options.argv = {path};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  py::VM vm(options);
  // The program picks its device as a user's would (kiln-cli's main installed
  // the device counter); the graph is the same either way.
  std::optional<ModelGraph> model;
  Status failed;
  capture::CaptureOptions co;
  co.default_backend = "eager";
  co.backend_runner = [&](const std::string&, const std::string&, const std::string&) -> capture::RegionRunner {
    return [&](const capture::RegionResult& region, const std::vector<py::Value>& inputs) {
      if (!model && failed.ok()) {
        Expected<Graph> aten = pipeline::lower_to_aten(vm, region);
        Expected<Graph> g = aten ? decomp::decompose(*aten) : aten;
        if (!g) {
          failed = g.status();
        } else {
          model.emplace();
          model->graph = std::move(*g);
          model->aten = std::move(*aten);
          size_t k = 0;
          for (const Node& n : region.graph.nodes) {
            if (n.op != OpKind::Placeholder || k >= inputs.size()) continue;
            const py::Value& v = inputs[k++];
            if (!v.is(py::ObjKind::Tensor)) {
              failed = Status::error("the model's graph takes a " + py::type_name(v) + " input");
              break;
            }
            const auto* t = v.as<py::TensorObj>();
            // A copy: the program goes on and trains, and its optimizer writes the parameters in place.
            model->inputs.push_back(t->t.clone());
            model->is_parameter.push_back(t->is_parameter);
            // Dynamo names a module's tensors by where they live (L_self_modules_bn1_buffers_running_mean_).
            model->per_call.push_back(!t->is_parameter && n.target.find("_buffers_") == std::string::npos);
          }
        }
      }
      return capture::run_graph(vm, region, inputs);
    };
  };
  capture::install_capture(vm, co);
  int code = 0;
  Status st = vm.run_file(path, &code);
  if (!st.ok() || code != 0) return Status::error(path + ": " + (st.ok() ? err : st.to_string()));
  if (!failed.ok()) return Status::error(path + ": " + failed.message());
  if (!model) return Status::error(path + ": the program compiled no region");
  for (const std::string& name : globals) {
    py::Ref<py::Module> main = vm.module("__main__");
    const py::Value* v = main ? main->dict->find_str(name) : nullptr;
    if (!v || !v->is(py::ObjKind::Tensor)) return Status::error(path + ": the program has no global tensor '" + name + "'");
    model->globals[name] = v->as<py::TensorObj>()->t;
  }
  return std::move(*model);
}

}  // namespace kiln::cli
