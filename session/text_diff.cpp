#include "session/text_diff.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <unordered_map>

namespace kiln::session {

std::vector<std::string_view> text_lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    pos = eol + 1;
  }
  return out;
}

namespace {

enum class Op { Keep, Del, Ins };

// The edit script turning a[0..n) into b[0..m) (Myers, forward, keeping each
// round's frontier to walk back); false when it needs more than max_edits.
bool myers(const std::vector<size_t>& a, const std::vector<size_t>& b, int max_edits, std::vector<Op>& script) {
  const int n = int(a.size()), m = int(b.size());
  const int max_d = std::min(n + m, max_edits);
  const int offset = max_d + 1;
  std::vector<int> v(size_t(2 * max_d + 3), 0);
  std::vector<std::vector<int>> trace;
  int found = -1;
  for (int d = 0; d <= max_d && found < 0; ++d) {
    // Only the diagonals round d can read: memory grows with D squared, not D times N.
    trace.emplace_back(v.begin() + (offset - d), v.begin() + (offset + d + 1));
    for (int k = -d; k <= d; k += 2) {
      int x = (k == -d || (k != d && v[size_t(offset + k - 1)] < v[size_t(offset + k + 1)])) ? v[size_t(offset + k + 1)]
                                                                                               : v[size_t(offset + k - 1)] + 1;
      int y = x - k;
      while (x < n && y < m && a[size_t(x)] == b[size_t(y)]) ++x, ++y;
      v[size_t(offset + k)] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  if (found < 0) return false;
  // Walk back from (n, m) through each round's frontier.
  std::vector<Op> rev;
  int x = n, y = m;
  for (int d = found; d > 0; --d) {
    const std::vector<int>& pv = trace[size_t(d)];  // pv[k + d]: diagonal k before round d
    const int k = x - y;
    const bool down = k == -d || (k != d && pv[size_t(k - 1 + d)] < pv[size_t(k + 1 + d)]);
    const int pk = down ? k + 1 : k - 1;
    const int px = pv[size_t(pk + d)], py = px - pk;
    const int sx = down ? px : px + 1;  // where this round's snake starts
    while (x > sx) rev.push_back(Op::Keep), --x, --y;
    rev.push_back(down ? Op::Ins : Op::Del);
    x = px;
    y = py;
  }
  while (x > 0) rev.push_back(Op::Keep), --x, --y;
  script.assign(rev.rbegin(), rev.rend());
  return true;
}

// The edit script of a[al..ah) against b[bl..bh), appended to `out`: Myers
// within the budget; past it (texts that differ in many places, a forward's
// code against a backward's), patience's anchors (lines found once on each
// side, in an order both keep) split the ranges, and each part is diffed so.
void diff_range(const std::vector<size_t>& a, size_t al, size_t ah, const std::vector<size_t>& b, size_t bl, size_t bh,
                int max_edits, std::vector<Op>& out) {
  size_t head = 0;
  while (al + head < ah && bl + head < bh && a[al + head] == b[bl + head]) ++head;
  out.insert(out.end(), head, Op::Keep);
  al += head;
  bl += head;
  size_t tail = 0;
  while (ah - tail > al && bh - tail > bl && a[ah - 1 - tail] == b[bh - 1 - tail]) ++tail;
  ah -= tail;
  bh -= tail;
  std::vector<Op> script;
  if (myers({a.begin() + long(al), a.begin() + long(ah)}, {b.begin() + long(bl), b.begin() + long(bh)}, max_edits, script)) {
    out.insert(out.end(), script.begin(), script.end());
  } else {
    std::unordered_map<size_t, std::pair<int, int>> count;  // hash -> (times in a, times in b)
    std::unordered_map<size_t, size_t> where_b;
    for (size_t i = al; i < ah; ++i) ++count[a[i]].first;
    for (size_t j = bl; j < bh; ++j) ++count[b[j]].second, where_b[b[j]] = j;
    std::vector<std::pair<size_t, size_t>> unique;  // (i, j), by i
    for (size_t i = al; i < ah; ++i)
      if (const auto& c = count[a[i]]; c.first == 1 && c.second == 1) unique.push_back({i, where_b[a[i]]});
    // The longest run increasing in j (patience sorting).
    std::vector<size_t> piles, back(unique.size(), SIZE_MAX);
    for (size_t k = 0; k < unique.size(); ++k) {
      auto at = std::lower_bound(piles.begin(), piles.end(), unique[k].second,
                                 [&](size_t pile, size_t j) { return unique[pile].second < j; });
      if (at != piles.begin()) back[k] = *(at - 1);
      if (at == piles.end()) piles.push_back(k);
      else *at = k;
    }
    std::vector<std::pair<size_t, size_t>> anchors;
    for (size_t k = piles.empty() ? SIZE_MAX : piles.back(); k != SIZE_MAX; k = back[k]) anchors.push_back(unique[k]);
    std::reverse(anchors.begin(), anchors.end());
    if (anchors.empty()) {
      out.insert(out.end(), ah - al, Op::Del);
      out.insert(out.end(), bh - bl, Op::Ins);
    } else {
      size_t i = al, j = bl;
      for (const auto& [ai, bj] : anchors) {
        diff_range(a, i, ai, b, j, bj, max_edits, out);
        out.push_back(Op::Keep);
        i = ai + 1;
        j = bj + 1;
      }
      diff_range(a, i, ah, b, j, bh, max_edits, out);
    }
  }
  out.insert(out.end(), tail, Op::Keep);
}

}  // namespace

TextDiff diff_lines(std::string_view left, std::string_view right, int max_edits) {
  const std::vector<std::string_view> a = text_lines(left), b = text_lines(right);
  std::hash<std::string_view> hash;
  std::vector<size_t> ha, hb;
  for (std::string_view l : a) ha.push_back(hash(l));
  for (std::string_view l : b) hb.push_back(hash(l));
  std::vector<Op> script;
  diff_range(ha, 0, ha.size(), hb, 0, hb.size(), max_edits, script);

  TextDiff out;
  int l = 0, r = 0;
  // A run of deletions and insertions between kept lines: paired row by row as changed.
  std::vector<int> dels, ins;
  auto flush = [&] {
    const size_t pairs = std::min(dels.size(), ins.size());
    for (size_t i = 0; i < pairs; ++i) out.rows.push_back({DiffRowKind::Changed, dels[i], ins[i]});
    for (size_t i = pairs; i < dels.size(); ++i) out.rows.push_back({DiffRowKind::Removed, dels[i], 0});
    for (size_t i = pairs; i < ins.size(); ++i) out.rows.push_back({DiffRowKind::Added, 0, ins[i]});
    dels.clear();
    ins.clear();
  };
  for (Op op : script) {
    if (op == Op::Keep) {
      flush();
      out.rows.push_back({DiffRowKind::Same, ++l, ++r});
    } else if (op == Op::Del) {
      dels.push_back(++l);
    } else {
      ins.push_back(++r);
    }
  }
  flush();
  // Hashes can collide: a kept pair whose lines differ is a change.
  for (DiffRow& row : out.rows)
    if (row.kind == DiffRowKind::Same && a[size_t(row.left - 1)] != b[size_t(row.right - 1)]) row.kind = DiffRowKind::Changed;
  for (const DiffRow& row : out.rows) {
    out.removed += row.kind == DiffRowKind::Removed;
    out.added += row.kind == DiffRowKind::Added;
    out.changed += row.kind == DiffRowKind::Changed;
  }
  return out;
}

}  // namespace kiln::session
