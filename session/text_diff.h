#pragma once
// A line diff of two texts (generated code of two stages or runs, or two
// printed graphs), as rows for a side-by-side view: lines on both sides that
// are equal, lines only on the left (removed), only on the right (added), and
// a removed run next to an added run paired row by row (changed).
//
// Myers' O((N+M)D) algorithm on line hashes after the common head and tail are
// cut; past `max_edits` differences (memory grows with their square), the
// texts are split at patience diff's anchors (lines found once on each side)
// and the parts diffed so; a part without anchors is one changed block.
//
// Tests: tests/session/test_text_diff.cpp.
#include <string_view>
#include <vector>

namespace kiln::session {

enum class DiffRowKind { Same, Changed, Removed, Added };

struct DiffRow {
  DiffRowKind kind = DiffRowKind::Same;
  int left = 0, right = 0;  // 1-based line numbers; 0: no line on that side
};

struct TextDiff {
  std::vector<DiffRow> rows;
  int removed = 0, added = 0, changed = 0;  // rows of each kind
  bool identical() const { return removed == 0 && added == 0 && changed == 0; }
};

TextDiff diff_lines(std::string_view left, std::string_view right, int max_edits = 2000);

// The lines of a text (no line ends), as diff_lines numbers them.
std::vector<std::string_view> text_lines(std::string_view text);

}  // namespace kiln::session
