#include "minifier/output_match.h"

#include <re2/re2.h>

namespace kiln::minify {

Expected<bool> output_matches(std::string_view text, const std::string& pattern) {
  RE2::Options options;
  options.set_log_errors(false);
  const RE2 re(pattern, options);
  if (!re.ok()) return Status::error("bad regex '" + pattern + "': " + re.error());
  return RE2::PartialMatch(re2::StringPiece(text.data(), text.size()), re);
}

}  // namespace kiln::minify
