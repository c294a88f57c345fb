#include "core/trace/synthetic_log.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace kiln::trace {

namespace {

// `log` with each envelope line (not the tab-indented payload lines, whose
// md5 must still match) passed through `rewrite(line, out)`, which appends it.
template <class Rewrite>
std::string rewrite_envelopes(std::string_view log, Rewrite rewrite) {
  std::string out;
  out.reserve(log.size() + log.size() / 32);
  size_t pos = 0;
  while (pos < log.size()) {
    size_t eol = log.find('\n', pos);
    if (eol == std::string_view::npos) eol = log.size() - 1;
    std::string_view line = log.substr(pos, eol + 1 - pos);
    if (line[0] == '\t') out.append(line);
    else rewrite(line, out);
    pos = eol + 1;
  }
  return out;
}

}  // namespace

std::string renumber_frame_ids(std::string_view log, int64_t offset) {
  static constexpr std::string_view kKey = "\"frame_id\": ";
  return rewrite_envelopes(log, [&](std::string_view line, std::string& out) {
    size_t k = line.find(kKey);
    size_t d = k == std::string_view::npos ? 0 : k + kKey.size(), e = d;
    while (k != std::string_view::npos && e < line.size() && std::isdigit(static_cast<unsigned char>(line[e]))) ++e;
    if (k == std::string_view::npos || e == d) {
      out.append(line);
    } else {
      out.append(line.substr(0, d));
      out += std::to_string(std::stoll(std::string(line.substr(d, e - d))) + offset);
      out.append(line.substr(e));
    }
  });
}

namespace {

// The reference TORCH_TRACE logs, in name order (the same logs on every machine).
Expected<std::vector<std::string>> reference_logs(const std::string& reference_dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> paths;
  for (const auto& dir : fs::directory_iterator(reference_dir + "/traces", ec))
    for (const auto& f : fs::directory_iterator(dir.path(), ec))
      if (f.path().extension() == ".log") paths.push_back(f.path());
  if (ec) return Status::error("cannot list reference traces: " + ec.message(), {reference_dir + "/traces", 0});
  std::sort(paths.begin(), paths.end());
  std::vector<std::string> logs;
  for (const fs::path& p : paths) {
    std::ifstream in(p, std::ios::binary);
    logs.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (logs.back().empty()) logs.pop_back();
  }
  if (logs.empty()) return Status::error("no reference TORCH_TRACE logs", {reference_dir + "/traces", 0});
  return logs;
}

}  // namespace

std::string with_rank(std::string_view log, int64_t rank) {
  const std::string field = "\"rank\": " + std::to_string(rank) + ", ";
  return rewrite_envelopes(log, [&](std::string_view line, std::string& out) {
    const size_t brace = line.find("] {");
    if (brace == std::string_view::npos) {
      out.append(line);
      return;
    }
    out.append(line.substr(0, brace + 3));
    out += field;
    out.append(line.substr(brace + 3));
  });
}

Status write_concatenated_log(const std::string& reference_dir, const std::string& out_path, uint64_t target_bytes,
                              uint64_t* written) {
  auto logs = reference_logs(reference_dir);
  if (!logs) return logs.status();
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::error("cannot create file", {out_path, 0});
  uint64_t total = 0;
  for (int64_t round = 0; total < target_bytes; ++round)
    for (const std::string& log : *logs) {
      std::string part = renumber_frame_ids(log, round * 1000);
      if (part.back() != '\n') part += '\n';  // the next log's first record starts a line
      out.write(part.data(), std::streamsize(part.size()));
      total += part.size();
    }
  out.close();
  if (!out) return Status::error("cannot write file", {out_path, 0});
  if (written) *written = total;
  return {};
}

Status write_rank_folder(const std::string& reference_dir, const std::string& out_dir, int ranks, uint64_t* written) {
  auto logs = reference_logs(reference_dir);
  if (!logs) return logs.status();
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return Status::error("cannot create folder: " + ec.message(), {out_dir, 0});
  uint64_t total = 0;
  for (int rank = 0; rank < ranks; ++rank) {
    const std::string text = with_rank((*logs)[size_t(rank) % logs->size()], rank);
    std::string path = out_dir;
    path += "/dedicated_log_torch_trace_rank_";
    path += std::to_string(rank);
    path += "_kiln.log";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(text.data(), std::streamsize(text.size()));
    out.close();
    if (!out) return Status::error("cannot write file", {path, 0});
    total += text.size();
  }
  if (written) *written = total;
  return {};
}

}  // namespace kiln::trace
