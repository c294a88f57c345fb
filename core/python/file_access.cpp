// Programs run without file access unless the user names folders on the
// command line: a program from a bug report must not read ~/.ssh or write a
// shell script where the user will run it.
#include <filesystem>

#include "core/python/vm.h"

namespace kiln::py {

namespace fs = std::filesystem;

namespace {

bool inside(const fs::path& path, const fs::path& dir) {
  auto d = dir.begin(), p = path.begin();
  for (; d != dir.end(); ++d, ++p) {
    if (d->empty()) continue;  // the trailing "" of "dir/"
    if (p == path.end() || *p != *d) return false;
  }
  return true;
}

}  // namespace

std::string program_file_path(VM& vm, const std::string& path, bool write) {
  std::vector<std::string> allowed = vm.options().allow_write;
  if (!write) allowed.insert(allowed.end(), vm.options().allow_read.begin(), vm.options().allow_read.end());
  std::error_code ec;
  // Symlinks (a final component included) and ".." are resolved first, so a
  // link inside an allowed folder to a file outside it is outside.
  const fs::path resolved = fs::weakly_canonical(fs::absolute(path, ec), ec);
  // What is left a link after that is dangling: writing would create its target.
  std::error_code link_ec;
  const bool dangling_link = !ec && fs::is_symlink(fs::symlink_status(resolved, link_ec));
  if (!ec && !path.empty() && !dangling_link) {
    for (const std::string& dir : allowed) {
      std::error_code dir_ec;
      const fs::path root = fs::weakly_canonical(dir, dir_ec);
      if (!dir_ec && inside(resolved, root)) return resolved.string();
    }
  }
  throw PyError("PermissionError", "[Errno 13] Permission denied: '" + path + "' (Kiln runs programs without file access; " +
                                       (write ? "--allow-write DIR" : "--allow-read DIR") + " allows a folder)");
}

}  // namespace kiln::py
