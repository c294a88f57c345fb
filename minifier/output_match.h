#pragma once
// The user's patterns over a command's output (--oracle-match, a compile
// error's expected message): RE2 syntax, matched in time linear in the
// output and in bounded stack, however long or hostile the output is.
#include <string>
#include <string_view>

#include "core/util/status.h"

namespace kiln::minify {

// Whether `pattern` matches somewhere in `text`; an error for a pattern RE2 rejects.
Expected<bool> output_matches(std::string_view text, const std::string& pattern);

}  // namespace kiln::minify
