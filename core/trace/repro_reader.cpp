// PyTorch minifier files (repro.py, minifier_launcher.py) and the
// fx_graph_runnable.py of debug folders: a `class Repro(torch.nn.Module)`
// whose forward is the graph, and `def load_args(reader):` listing the inputs
// as torch/_dynamo/debug_utils.py's InputWriter writes them:
//     buf0 = reader.storage('<sha1>' or None, 8192, device=device(type='cuda', index=0), dtype_hint=torch.float16)
//     reader.tensor(buf0, (8, 16), (1, 8), dtype=torch.float16, storage_offset=4, requires_grad=True, is_leaf=True)  # x
//     reader.symint(6)  # s0
//     reader.const('name')  # name, filtered out during compilation
#include <filesystem>
#include <algorithm>
#include <cctype>
#include <map>

#include "core/trace/file_data.h"
#include "core/trace/reader.h"
#include "core/trace/text_util.h"

namespace kiln::trace {

std::vector<std::string_view> split_python_args(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  char quote = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') quote = c;
    else if (c == '(' || c == '[' || c == '{') ++depth;
    else if (c == ')' || c == ']' || c == '}') --depth;
    else if (c == ',' && depth == 0) {
      out.push_back(trim(s.substr(start, i - start)));
      start = i + 1;
    }
  }
  std::string_view last = trim(s.substr(start));
  if (!last.empty()) out.push_back(last);
  return out;
}

namespace {

namespace fs = std::filesystem;

// "reader.tensor(...)  # name" -> ("tensor", "...", "name"); false if the line is not a reader call.
bool reader_call(std::string_view line, std::string_view& method, std::string_view& args, std::string_view& comment,
                 std::string_view& target) {
  target = {};
  size_t eq = line.find(" = reader.");
  if (eq != std::string_view::npos) {
    target = trim(line.substr(0, eq));
    line = line.substr(eq + 3);
  }
  if (!starts_with(line, "reader.")) return false;
  size_t open = line.find('(');
  if (open == std::string_view::npos) return false;
  method = line.substr(7, open - 7);
  // The call ends at the parenthesis that closes `open`.
  int depth = 0;
  char quote = 0;
  size_t close = std::string_view::npos;
  for (size_t i = open; i < line.size(); ++i) {
    char c = line[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') quote = c;
    else if (c == '(') ++depth;
    else if (c == ')' && --depth == 0) {
      close = i;
      break;
    }
  }
  if (close == std::string_view::npos) return false;
  args = line.substr(open + 1, close - open - 1);
  std::string_view rest = trim(line.substr(close + 1));
  comment = starts_with(rest, "#") ? trim(rest.substr(1)) : std::string_view();
  return true;
}

std::vector<std::string> tuple_items(std::string_view t) {
  std::vector<std::string> out;
  t = trim(t);
  if (t.size() >= 2 && (t.front() == '(' || t.front() == '[')) t = t.substr(1, t.size() - 2);
  for (std::string_view item : split_python_args(t)) out.emplace_back(item);
  return out;
}

std::string unquote(std::string_view s) {
  s = trim(s);
  if (s.size() >= 2 && (s.front() == '\'' || s.front() == '"') && s.back() == s.front()) return std::string(s.substr(1, s.size() - 2));
  return std::string(s);
}

// "device(type='cuda', index=0)" -> "cuda:0"; "device(type='cpu')" -> "cpu".
std::string device_name(std::string_view s) {
  s = trim(s);
  if (!starts_with(s, "device(")) return unquote(s);
  std::string type, index;
  for (std::string_view a : split_python_args(s.substr(7, s.size() - 8))) {
    if (starts_with(a, "type=")) type = unquote(a.substr(5));
    else if (starts_with(a, "index=")) index = std::string(trim(a.substr(6)));
    else if (type.empty()) type = unquote(a);
  }
  return index.empty() ? type : type + ":" + index;
}

std::string dtype_name(std::string_view s) {
  s = trim(s);
  return std::string(starts_with(s, "torch.") ? s.substr(6) : s);
}

bool is_int(std::string_view s) {
  if (s.empty()) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

// Row-major strides, as text because sizes may be symbols: (s0, 8) -> (8, 1).
std::vector<std::string> contiguous_strides(const std::vector<std::string>& shape) {
  std::vector<std::string> out(shape.size());
  std::string acc = "1";
  for (size_t k = shape.size(); k-- > 0;) {
    out[k] = acc;
    const std::string& d = shape[k];
    if (is_int(acc) && is_int(d)) acc = std::to_string(std::stoll(acc) * std::stoll(d));
    else if (acc == "1") acc = d;
    else acc = d + "*" + acc;
  }
  return out;
}

struct Storage {
  std::string bytes, hash, device = "cpu", dtype_hint;
};

class LoadArgsParser {
 public:
  LoadArgsParser(const std::string& file, std::vector<Diagnostic>* diags) : file_(file), diags_(diags) {}

  void line(std::string_view raw, int number, std::vector<ReproInput>& out) {
    std::string_view line = trim(raw);
    if (line.empty() || line[0] == '#') return;
    // InputWriter.unsupported() dumps what it could inside a string literal.
    if (starts_with(line, "\"\"\"")) {
      in_docstring_ = !in_docstring_;
      return;
    }
    if (in_docstring_) return;
    std::string_view method, args, comment, target;
    if (!reader_call(line, method, args, comment, target)) return bad(number, line);
    std::vector<std::string_view> a = split_python_args(args);
    if (method == "storage") return storage(target, a, number, line);
    ReproInput in;
    in.line = number;
    in.name = std::string(comment.substr(0, comment.find(',')));
    if (method == "tensor") {
      if (!tensor(a, in, number, line)) return;
    } else if (method == "symint") {
      in.kind = "symint";
      in.value = a.empty() ? std::string() : std::string(a[0]);
    } else if (method == "const") {
      in.kind = "const";
      in.value = a.empty() ? std::string() : unquote(a[0]);
    } else {
      return bad(number, line);
    }
    out.push_back(std::move(in));
  }

 private:
  void bad(int number, std::string_view line) {
    if (diags_) diags_->push_back({file_, number, "cannot read this load_args line: " + std::string(line.substr(0, 120))});
  }

  void storage(std::string_view target, const std::vector<std::string_view>& a, int number, std::string_view line) {
    if (target.empty() || a.size() < 2) return bad(number, line);
    Storage s;
    s.hash = a[0] == "None" ? std::string() : unquote(a[0]);
    s.bytes = std::string(a[1]);
    for (size_t k = 2; k < a.size(); ++k) {
      if (starts_with(a[k], "device=")) s.device = device_name(a[k].substr(7));
      else if (starts_with(a[k], "dtype_hint=")) s.dtype_hint = dtype_name(a[k].substr(11));
    }
    storages_[std::string(target)] = std::move(s);
  }

  bool tensor(const std::vector<std::string_view>& a, ReproInput& in, int number, std::string_view line) {
    in.kind = "tensor";
    if (a.size() < 2) {
      bad(number, line);
      return false;
    }
    in.storage = std::string(a[0]);
    auto st = storages_.find(in.storage);
    if (st == storages_.end()) {
      if (diags_) diags_->push_back({file_, number, "reader.tensor uses storage '" + in.storage + "', which load_args did not create"});
    } else {
      in.storage_bytes = st->second.bytes;
      in.storage_hash = st->second.hash;
      in.device = st->second.device;
    }
    in.shape = tuple_items(a[1]);
    bool have_stride = false;
    for (size_t k = 2; k < a.size(); ++k) {
      std::string_view arg = a[k];
      size_t eq = arg.find('=');
      bool keyword = eq != std::string_view::npos && arg.substr(0, eq).find('(') == std::string_view::npos;
      if (!keyword) {
        in.stride = tuple_items(arg);  // the one positional argument after the shape
        have_stride = true;
        continue;
      }
      std::string_view key = trim(arg.substr(0, eq)), value = trim(arg.substr(eq + 1));
      if (key == "dtype") in.dtype = dtype_name(value);
      else if (key == "storage_offset") in.storage_offset = std::string(value);
      else if (key == "requires_grad") in.requires_grad = value == "True";
      else if (key == "is_leaf") in.is_leaf = value == "True";
    }
    if (!have_stride) in.stride = contiguous_strides(in.shape);
    return true;
  }

  std::string file_;
  std::vector<Diagnostic>* diags_;
  std::map<std::string, Storage> storages_;
  bool in_docstring_ = false;
};

size_t indent_of(std::string_view line) {
  size_t n = 0;
  while (n < line.size() && (line[n] == ' ' || line[n] == '\t')) ++n;
  return n;
}

// Byte offset of each line start, to turn line ranges into PayloadRefs.
std::vector<size_t> line_offsets(std::string_view text) {
  std::vector<size_t> out{0};
  for (size_t i = 0; i < text.size(); ++i)
    if (text[i] == '\n') out.push_back(i + 1);
  return out;
}

}  // namespace

// The 2022 style, before load_args: a module-level list of
//   args = [((256, 64, 56, 56), (200704, 3136, 56, 1), torch.float32, 'cuda', True), ...]
// (shape, stride, dtype, device and, later, requires_grad), each drawn with
// rand_strided. Each becomes a tensor input over a storage of its own, sized
// by the minifier from its shape and strides.
namespace {

// One tensor of a 2022 args list: (shape, stride, dtype, device[, requires_grad]),
// or rand_strided's arguments in the same order.
bool args_item(const std::vector<std::string>& fields, ReproInput& in) {
  if (fields.size() < 4) return false;
  in.kind = "tensor";
  in.storage = in.name;
  in.shape = tuple_items(fields[0]);
  in.stride = tuple_items(fields[1]);
  in.dtype = dtype_name(fields[2]);
  in.device = device_name(fields[3]);
  in.requires_grad = fields.size() > 4 && trim(fields[4]) == "True";
  return true;
}

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(uint8_t(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return std::isalnum(uint8_t(c)) || c == '_'; });
}

}  // namespace

std::vector<ReproInput> parse_args_list(std::string_view source, const std::string& file, std::vector<Diagnostic>* diags) {
  std::vector<ReproInput> out;
  std::vector<std::string_view> lines = split_lines(source);
  std::vector<size_t> starts = line_offsets(source);
  // `args = []` then one `args.append(rand_strided(shape, stride, dtype, device))` per input.
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view l = trim(lines[i]);
    if (!starts_with(l, "args.append(rand_strided(")) continue;
    if (const size_t comment = l.find("  #"); comment != std::string_view::npos) l = trim(l.substr(0, comment));
    const size_t open = l.find("rand_strided(") + 12;
    const size_t close = l.rfind("))");
    ReproInput in;
    in.line = int(i + 1);
    in.name = "args[" + std::to_string(out.size()) + "]";
    std::vector<std::string> fields;
    if (close != std::string_view::npos && close > open)
      for (std::string_view f : split_python_args(l.substr(open + 1, close - open - 1))) fields.emplace_back(f);
    if (!args_item(fields, in)) {
      if (diags) diags->push_back({file, in.line, in.name + " is not rand_strided(shape, stride, dtype, device)"});
      return {};
    }
    out.push_back(std::move(in));
  }
  if (!out.empty()) return out;
  // A module-level reader (`t0 = reader.tensor(buf0, ...)`), then `args = [t0, t1]`.
  std::map<std::string, ReproInput> named;
  {
    LoadArgsParser parser(file, diags);
    for (size_t i = 0; i < lines.size(); ++i) {
      std::string_view l = lines[i];
      const size_t eq = l.find(" = reader.");
      if (indent_of(l) != 0 || eq == std::string_view::npos || !is_identifier(l.substr(0, eq))) continue;
      std::vector<ReproInput> got;
      parser.line(l, int(i + 1), got);
      for (ReproInput& in : got) {
        if (in.name.empty()) in.name = std::string(l.substr(0, eq));
        named[std::string(l.substr(0, eq))] = std::move(in);
      }
    }
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!starts_with(lines[i], "args = [")) continue;
    // The list may span lines: through its matching bracket.
    const size_t open = starts[i] + lines[i].find('[');
    int depth = 0;
    size_t close = std::string_view::npos;
    for (size_t k = open; k < source.size() && close == std::string_view::npos; ++k) {
      if (source[k] == '[' || source[k] == '(') ++depth;
      if ((source[k] == ']' || source[k] == ')') && --depth == 0) close = k;
    }
    if (close == std::string_view::npos) {
      if (diags) diags->push_back({file, int(i + 1), "the args list does not end"});
      return out;
    }
    int k = 0;
    for (std::string_view item : split_python_args(source.substr(open + 1, close - open - 1))) {
      if (auto it = named.find(std::string(trim(item))); it != named.end()) {
        out.push_back(it->second);
        ++k;
        continue;
      }
      ReproInput in;
      in.line = int(i + 1);
      in.name = "args[" + std::to_string(k) + "]";
      if (!args_item(tuple_items(item), in)) {
        if (diags)
          diags->push_back({file, in.line, in.name + " is not (shape, stride, dtype, device[, requires_grad])" +
                                               std::string(is_identifier(trim(item)) ? " nor a tensor the file's reader made" : "")});
        return {};
      }
      out.push_back(std::move(in));
      ++k;
    }
    return out;
  }
  return out;
}

namespace {

// Brackets opened and not yet closed on `text`, outside string literals.
int open_brackets(std::string_view text) {
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote) {
      if (c == '\\') ++i;
      else if (c == quote) quote = 0;
    } else if (c == '\'' || c == '"') {
      quote = c;
    } else if (c == '#') {
      break;
    } else if (c == '(' || c == '[' || c == '{') {
      ++depth;
    } else if (c == ')' || c == ']' || c == '}') {
      --depth;
    }
  }
  return depth;
}

}  // namespace

std::vector<ReproInput> parse_load_args(std::string_view source, const std::string& file, std::vector<Diagnostic>* diags) {
  std::vector<ReproInput> out;
  std::vector<std::string_view> lines = split_lines(source);
  size_t i = 0;
  while (i < lines.size() && !starts_with(lines[i], "def load_args(")) ++i;
  if (i == lines.size()) return parse_args_list(source, file, diags);
  LoadArgsParser parser(file, diags);
  for (++i; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    if (!trim(l).empty() && indent_of(l) == 0) break;
    // Older files set the format version inside the function.
    if (starts_with(trim(l), "load_args._version")) continue;
    // A call a formatter (black) spread over several lines is one line here.
    const int first = int(i + 1);
    std::string joined(l);
    while (open_brackets(joined) > 0 && i + 1 < lines.size() && joined.size() < 64 * 1024) {
      joined += ' ';
      joined += trim(lines[++i]);
    }
    parser.line(joined, first, out);
  }
  return out;
}

// The `class Repro` block: from the class line to the next top-level statement.
bool find_repro_class(std::string_view source, size_t& first, size_t& last) {
  std::vector<std::string_view> lines = split_lines(source);
  size_t i = 0;
  while (i < lines.size() && !starts_with(lines[i], "class Repro(")) ++i;
  if (i == lines.size()) return false;
  first = i;
  size_t end = i + 1;
  for (size_t k = i + 1; k < lines.size(); ++k) {
    if (trim(lines[k]).empty()) continue;
    if (indent_of(lines[k]) == 0) break;
    end = k + 1;
  }
  last = end;  // one past the last line of the class
  return true;
}

// Adds the Repro class of `source` (file `file` of `t`) as a "repro" stage of `e`
// plus its inputs. Used for repro files and debug-folder fx_graph_runnable.py.
bool add_repro(Trace& t, CompileEntry& e, uint32_t file, std::string_view source, const std::string& stage) {
  size_t first = 0, last = 0;
  if (!find_repro_class(source, first, last)) return false;
  std::vector<size_t> starts = line_offsets(source);
  size_t begin = starts[first];
  size_t end = last < starts.size() ? starts[last] : source.size();
  int same = 0;
  for (const Artifact& other : e.artifacts) same += other.base == stage;
  Artifact a;
  a.base = stage;
  a.name = same == 0 ? stage : stage + "#" + std::to_string(same + 1);
  a.tag = "repro";
  a.line = int(first + 1);
  a.payload = {file, begin, end - begin, int(first + 1), int(last - first), PayloadEncoding::Plain};
  a.graph = true;  // the Repro class is the graph
  e.artifacts.push_back(std::move(a));
  if (e.inputs.empty()) e.inputs = parse_load_args(source, t.files[file].path, &t.diagnostics);
  return true;
}

Expected<Trace> read_minifier_file(const std::string& path) {
  auto data = FileData::map(path);
  if (!data) return data.status();
  std::string_view source = (*data)->text();
  Trace t;
  t.kind = TraceKind::Minifier;
  t.path = path;
  t.files.push_back({path, uint64_t(source.size()), std::nullopt});
  t.keep_file_data(0, *data);
  t.bytes = source.size();
  CompileEntry e;
  e.label = fs::path(path).stem().string();
  e.first_line = 1;
  if (!add_repro(t, e, 0, source, "repro"))
    return Status::error("not a minifier repro: no 'class Repro(torch.nn.Module)' in it", {path, 0});
  t.entries.push_back(std::move(e));
  assign_labels(t);
  return t;
}

}  // namespace kiln::trace
