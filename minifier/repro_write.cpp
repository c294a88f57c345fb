// write_kiln_repro: the folder is built beside its destination and swapped in
// with one rename, so a crash mid-write never leaves half a repro under the
// name a user (or a --resume) would open.
#include <stdio.h>  // renameat2, RENAME_EXCHANGE (glibc)
#include <fcntl.h>  // AT_FDCWD
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/graph/printer.h"
#include "core/io/safetensors.h"
#include "minifier/repro.h"
#include "minifier/repro_internal.h"
#include "core/util/output_text.h"

namespace kiln::minify {

namespace fs = std::filesystem;

namespace {

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  if (!f) throw Error("cannot create the file", {p.string(), 0});
  f << text;
  f.close();
  if (!f) throw Error("could not write the file (disk full?)", {p.string(), 0});
}

std::string readme(const fs::path& dir, const Repro& r) {
  size_t stored = 0;
  for (size_t k = 0; k < r.inputs.size(); ++k) stored += k >= r.input_origins.size() || r.input_origins[k] == "stored";
  std::string out =
      "Kiln repro: a graph that fails the check in predicate.json.\n"
      "Replay: kiln-cli repro run " + dir.string() + "\n"
      "\n"
      "graph.txt           the graph, in GraphModule.print_readable() form\n"
      "inputs.safetensors  one tensor per placeholder, named after it\n"
      "predicate.json      the check, its tolerance and the failure it looks for\n";
  out += "Inputs: " + std::to_string(r.inputs.size()) + " (" + std::to_string(stored) + " recorded";
  if (stored < r.inputs.size()) out += ", " + std::to_string(r.inputs.size() - stored) + " drawn at random";
  out += ")\n";
  if (!r.path.empty()) out += "Reduced from: " + r.path + "\n";
  return out;
}

// A folder write_kiln_repro may replace: one holding nothing but repro files.
bool is_replaceable(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  bool has_graph = false;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name == kGraphFile) has_graph = true;
    else if (name != kInputsFile && name != kPredicateFile && name != kReadmeFile) return false;
  }
  return has_graph || fs::is_empty(dir, ec);
}

void swap_in(const fs::path& staged, const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) {
    fs::rename(staged, dir, ec);
    if (ec) throw Error("cannot move the new repro into place: " + ec.message(), {dir.string(), 0});
    return;
  }
  // One atomic exchange where the filesystem offers it; the old repro then
  // sits at the staging name and is removed.
  if (renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) == 0) {
    fs::remove_all(staged, ec);
    return;
  }
  fs::path old = dir;
  old += ".old-" + std::to_string(getpid());
  fs::remove_all(old, ec);
  fs::rename(dir, old, ec);
  if (ec) throw Error("cannot move the old repro aside: " + ec.message(), {dir.string(), 0});
  fs::rename(staged, dir, ec);
  if (ec) throw Error("cannot move the new repro into place: " + ec.message(), {dir.string(), 0});
  fs::remove_all(old, ec);
}

void write_kiln(const std::string& dir_text, const Repro& r) {
  fs::path dir = fs::absolute(fs::path(dir_text)).lexically_normal();
  if (dir.has_filename() == false) dir = dir.parent_path();
  std::error_code ec;
  if (fs::exists(dir, ec) && !is_replaceable(dir))
    throw Error("refusing to write a repro here: the folder holds files that are not a Kiln repro's", {dir.string(), 0});
  std::vector<const Node*> placeholders;
  for (const Node& n : r.graph.nodes)
    if (n.op == OpKind::Placeholder) placeholders.push_back(&n);
  if (placeholders.size() != r.inputs.size())
    throw Error("the graph has " + std::to_string(placeholders.size()) + " placeholders but the repro " +
                    std::to_string(r.inputs.size()) + " inputs",
                {dir.string(), 0});
  NamedTensors tensors;
  nlohmann::json origins = nlohmann::json::array();
  for (size_t k = 0; k < placeholders.size(); ++k) {
    if (!r.inputs[k].defined() || r.inputs[k].is_meta())
      throw Error("input '" + placeholders[k]->name + "' has no data", {dir.string(), 0});
    tensors.emplace_back(placeholders[k]->name, plain_contiguous(r.inputs[k]));
    origins.push_back(k < r.input_origins.size() ? r.input_origins[k] : std::string("stored"));
  }
  fs::path staged = dir;
  staged += ".tmp-" + std::to_string(getpid());
  fs::remove_all(staged, ec);
  fs::create_directories(staged, ec);
  if (ec) throw Error("cannot create the folder: " + ec.message(), {staged.string(), 0});
  try {
    write_file(staged / kGraphFile, print_graph_module(r.graph));
    Status st = write_safetensors((staged / kInputsFile).string(), tensors, {{std::string(kOriginsKey), kiln::json_text(origins)}});
    if (!st.ok()) throw Error(st.message(), st.where());
    if (!r.predicate_json.empty()) {
      std::string text = r.predicate_json;
      if (text.back() != '\n') text += '\n';
      write_file(staged / kPredicateFile, text);
    }
    write_file(staged / kReadmeFile, readme(dir, r));
    swap_in(staged, dir);
  } catch (...) {
    fs::remove_all(staged, ec);
    throw;
  }
}

}  // namespace

Status write_kiln_repro(const std::string& dir, const Repro& r) {
  try {
    write_kiln(dir, r);
  } catch (const Error& e) {
    return e.to_status();
  } catch (const fs::filesystem_error& e) {
    return Status::error(e.what(), {dir, 0});
  }
  return Status();
}

}  // namespace kiln::minify
