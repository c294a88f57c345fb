#include "viewer/code_editor.h"

#include <QEvent>
#include <QFontDatabase>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QToolTip>

#include <algorithm>

#include "viewer/code_highlighter.h"

namespace kiln::viewer {

namespace {

constexpr int kNumberMargin = 0, kMarkMargin = 1, kFoldMargin = 2;
constexpr int kSearchIndicator = 8;  // the first indicator left to containers
constexpr int kMaxMatches = 100000;

QFont code_font() { return QFontDatabase::systemFont(QFontDatabase::FixedFont); }

int indent_of(const QString& line) {
  int cols = 0;
  for (QChar c : line) {
    if (c == ' ') ++cols;
    else if (c == '\t') cols = (cols / 8 + 1) * 8;
    else break;
  }
  return cols;
}

bool blank(const QString& line) { return line.trimmed().isEmpty(); }

// Fold depth per line: braces for LLVM IR and CUDA C++; indentation
// elsewhere, where a triple-quoted string (a kernel's C++ source in
// output_code.py) folds under the line that opens it, its braces inside.
std::vector<int> fold_depths(const QStringList& lines, const QString& language) {
  std::vector<int> depth(size_t(lines.size()), 0);
  const bool braces = language == "llvm" || language == "cuda";
  int open = 0;
  bool in_string = false;
  int string_base = 0;
  for (qsizetype i = 0; i < lines.size(); ++i) {
    const QString& l = lines[i];
    if (braces) {
      depth[size_t(i)] = open;
      open = std::max(0, open + int(l.count('{')) - int(l.count('}')));
      continue;
    }
    if (in_string) {
      depth[size_t(i)] = string_base + 1 + open;
      open = std::max(0, open + int(l.count('{')) - int(l.count('}')));
    } else {
      depth[size_t(i)] = indent_of(l) / 2;
    }
    const int quotes = int(l.count("'''") + l.count("\"\"\""));
    if (quotes % 2 == 1) {
      in_string = !in_string;
      if (in_string) {
        string_base = depth[size_t(i)];
        open = 0;
      }
    }
  }
  return depth;
}

}  // namespace

CodeEditor::CodeEditor(QWidget* parent) : QsciScintilla(parent) {
  setUtf8(true);
  setReadOnly(true);
  setFont(code_font());
  setMarginsFont(code_font());
  setWrapMode(WrapNone);
  setWrapVisualFlags(WrapFlagByText);
  setCaretLineVisible(true);
  setCaretLineBackgroundColor(QColor(225, 236, 250));
  setMarginsBackgroundColor(palette().color(QPalette::AlternateBase));
  setMarginsForegroundColor(QColor(140, 140, 140));
  setMarginType(kNumberMargin, NumberMargin);
  setMarginType(kMarkMargin, SymbolMargin);
  setMarginWidth(kMarkMargin, 5);
  setMarginSensitivity(kMarkMargin, false);
  setFolding(BoxedTreeFoldStyle, kFoldMargin);
  setFoldMarginColors(palette().color(QPalette::AlternateBase), palette().color(QPalette::AlternateBase));
  // Code is read, not edited: no brace matching, tabs shown as the file has them.
  setBraceMatching(NoBraceMatch);
  setScrollWidthTracking(true);
  setScrollWidth(1);
  SendScintilla(SCI_INDICSETSTYLE, kSearchIndicator, INDIC_ROUNDBOX);
  SendScintilla(SCI_INDICSETFORE, kSearchIndicator, QColor(240, 170, 0));
  SendScintilla(SCI_INDICSETALPHA, kSearchIndicator, 90);
  SendScintilla(SCI_INDICSETUNDER, kSearchIndicator, true);
  viewport()->installEventFilter(this);
  updateNumberMargin();
}

void CodeEditor::setCode(const QString& text, const QString& language) {
  if (notice_) {
    notice_ = false;
    setWrapMode(WrapNone);
    setMarginWidth(kMarkMargin, 5);
    setFolding(BoxedTreeFoldStyle, kFoldMargin);
  }
  numbers_.clear();
  tips_.clear();
  markerDeleteAll();
  language_ = language;
  setLexer(nullptr);
  delete lexer_;
  lexer_ = nullptr;
  setColor(QColor(30, 30, 30));
  setFont(code_font());
  if (CodeHighlighter::knows(language)) lexer_ = new CodeHighlighter(language, this);
  setReadOnly(false);
  setText(text);
  setReadOnly(true);
  if (lexer_) setLexer(lexer_);
  setMarginsFont(code_font());
  // The caret line and the margins were reset with the lexer.
  setCaretLineBackgroundColor(QColor(225, 236, 250));
  setMarginsBackgroundColor(palette().color(QPalette::AlternateBase));
  setMarginsForegroundColor(QColor(140, 140, 140));
  computeFolds();
  updateNumberMargin();
  setSearch(needle_);
  setCursorPosition(0, 0);
  setFirstVisibleLine(0);
}

void CodeEditor::showNotice(const QString& text) {
  setCode(text, {});
  notice_ = true;
  setColor(QColor(120, 120, 120));
  setWrapMode(WrapWord);
  for (int m : {kNumberMargin, kMarkMargin, kFoldMargin}) setMarginWidth(m, 0);
  setFolding(NoFoldStyle, kFoldMargin);
  setCaretLineVisible(false);
}

void CodeEditor::setWrapLines(bool on) { setWrapMode(on ? WrapWord : WrapNone); }

void CodeEditor::setLineNumbers(std::vector<int> numbers) {
  numbers_ = std::move(numbers);
  updateNumberMargin();
}

void CodeEditor::updateNumberMargin() {
  if (notice_) return;
  setCaretLineVisible(true);
  int biggest = std::max(1, lines());
  if (!numbers_.empty()) biggest = std::max(1, *std::max_element(numbers_.begin(), numbers_.end()));
  const QString widest = QString(std::max<qsizetype>(3, QString::number(biggest).size()) + 1, '9');
  if (numbers_.empty()) {
    setMarginType(kNumberMargin, NumberMargin);
    clearMarginText();
  } else {
    // Sparse numbers are margin text: Scintilla numbers lines 1..N only.
    setMarginType(kNumberMargin, TextMarginRightJustified);
    clearMarginText();
    for (size_t i = 0; i < numbers_.size() && int(i) < lines(); ++i)
      if (numbers_[i] > 0) setMarginText(int(i), QString::number(numbers_[i]), STYLE_LINENUMBER);
  }
  setMarginWidth(kNumberMargin, widest);
}

bool CodeEditor::hasLineNumbers() const {
  if (notice_ || marginWidth(kNumberMargin) <= 0) return false;
  const int biggest = numbers_.empty() ? lines() : *std::max_element(numbers_.begin(), numbers_.end());
  return marginWidth(kNumberMargin) >= QFontMetrics(code_font()).horizontalAdvance(QString::number(biggest));
}

void CodeEditor::computeFolds() {
  const QStringList lines = text().split('\n');
  const std::vector<int> depth = fold_depths(lines, language_);
  const int n = int(depth.size());
  // A blank line takes the depth of the next line that is not, so a body's
  // trailing blank lines do not hang out of its fold.
  std::vector<int> level(depth);
  for (int i = n - 1, next = 0; i >= 0; --i) {
    if (blank(lines[i])) level[size_t(i)] = next;
    else next = level[size_t(i)];
  }
  for (int i = 0; i < n; ++i) {
    int next = i + 1;
    while (next < n && blank(lines[next])) ++next;
    int flags = SC_FOLDLEVELBASE + level[size_t(i)];
    if (blank(lines[i])) flags |= SC_FOLDLEVELWHITEFLAG;
    else if (next < n && level[size_t(next)] > level[size_t(i)]) flags |= SC_FOLDLEVELHEADERFLAG;
    SendScintilla(SCI_SETFOLDLEVEL, i, flags);
  }
}

int CodeEditor::foldPoints() const {
  int count = 0;
  for (int i = 0; i < lines(); ++i)
    if (SendScintilla(SCI_GETFOLDLEVEL, i) & SC_FOLDLEVELHEADERFLAG) ++count;
  return count;
}

void CodeEditor::foldAllPoints(bool fold) {
  SendScintilla(SCI_FOLDALL, fold ? SC_FOLDACTION_CONTRACT : SC_FOLDACTION_EXPAND);
}

int CodeEditor::blockOf(int line) const {
  if (numbers_.empty()) return line >= 1 && line <= lines() ? line - 1 : -1;
  auto it = std::find(numbers_.begin(), numbers_.end(), line);
  return it == numbers_.end() ? -1 : int(it - numbers_.begin());
}

int CodeEditor::lineOf(int block) const {
  if (numbers_.empty()) return block + 1;
  return block >= 0 && block < int(numbers_.size()) ? numbers_[size_t(block)] : 0;
}

int CodeEditor::markerFor(QColor colour) {
  // Markers 0..24 are free (25..31 draw the folds); a few colours are ever used at once.
  auto it = markers_.find(colour.rgb());
  if (it != markers_.end()) return it->second;
  const int n = std::min(int(markers_.size()), 11);
  markerDefine(Background, 2 * n);
  setMarkerBackgroundColor(colour, 2 * n);
  SendScintilla(SCI_MARKERSETALPHA, 2 * n, 70);
  markerDefine(FullRectangle, 2 * n + 1);  // a strip in the mark margin, seen at a glance
  setMarkerBackgroundColor(colour, 2 * n + 1);
  setMarkerForegroundColor(colour, 2 * n + 1);
  markers_[colour.rgb()] = 2 * n;
  return 2 * n;
}

void CodeEditor::markLine(int line, QColor colour, const QString& tooltip) {
  const int b = blockOf(line);
  QString& tip = tips_[line];
  if (!tooltip.isEmpty()) tip += (tip.isEmpty() ? "" : "\n\n") + tooltip;
  if (b < 0) return;
  const int m = markerFor(colour);
  markerAdd(b, m);
  markerAdd(b, m + 1);
}

void CodeEditor::clearMarks() {
  tips_.clear();
  markerDeleteAll();
}

void CodeEditor::goToLine(int line) {
  const int b = blockOf(line);
  if (b < 0) return;
  ensureLineVisible(b);  // opens a fold that hides it
  setCursorPosition(b, 0);
  const int visible = int(SendScintilla(SCI_VISIBLEFROMDOCLINE, b));
  const int on_screen = int(SendScintilla(SCI_LINESONSCREEN));
  setFirstVisibleLine(std::max(0, visible - on_screen / 2));
}

int CodeEditor::currentLineNumber() const {
  int line = 0, index = 0;
  getCursorPosition(&line, &index);
  return lineOf(line);
}

QString CodeEditor::currentLineText() const {
  int line = 0, index = 0;
  getCursorPosition(&line, &index);
  QString t = text(line);
  while (t.endsWith('\n') || t.endsWith('\r')) t.chop(1);
  return t;
}

int CodeEditor::firstVisibleLineNumber() const {
  return lineOf(int(SendScintilla(SCI_DOCLINEFROMVISIBLE, firstVisibleLine())));
}

int CodeEditor::setSearch(const QString& needle, bool caseSensitive) {
  needle_ = needle;
  matches_.clear();
  current_match_ = -1;
  SendScintilla(SCI_SETINDICATORCURRENT, kSearchIndicator);
  SendScintilla(SCI_INDICATORCLEARRANGE, 0, SendScintilla(SCI_GETLENGTH));
  if (!needle.isEmpty() && !notice_) {
    const QByteArray bytes = needle.toUtf8();
    const long length = SendScintilla(SCI_GETLENGTH);
    SendScintilla(SCI_SETSEARCHFLAGS, caseSensitive ? SCFIND_MATCHCASE : 0);
    long from = 0;
    while (from < length && int(matches_.size()) < kMaxMatches) {
      SendScintilla(SCI_SETTARGETSTART, from);
      SendScintilla(SCI_SETTARGETEND, length);
      const long at = SendScintilla(SCI_SEARCHINTARGET, bytes.size(), bytes.constData());
      if (at < 0) break;
      const long end = SendScintilla(SCI_GETTARGETEND);
      matches_.push_back({int(at), int(end - at)});
      SendScintilla(SCI_INDICATORFILLRANGE, at, end - at);
      from = std::max(end, at + 1);
    }
  }
  emit searchMoved(0, int(matches_.size()));
  return int(matches_.size());
}

bool CodeEditor::searchNext(bool forward) {
  if (matches_.empty()) return false;
  // From the selection (or the cursor): the first match after it, or the last before it.
  const long sel_start = SendScintilla(SCI_GETSELECTIONSTART), sel_end = SendScintilla(SCI_GETSELECTIONEND);
  int pick = -1;
  if (forward) {
    const long after = current_match_ >= 0 ? sel_start + 1 : sel_start;
    for (size_t i = 0; i < matches_.size() && pick < 0; ++i)
      if (matches_[i].first >= after) pick = int(i);
    if (pick < 0) pick = 0;
  } else {
    for (int i = int(matches_.size()) - 1; i >= 0 && pick < 0; --i)
      if (matches_[size_t(i)].first < sel_start || (current_match_ < 0 && matches_[size_t(i)].first < sel_end)) pick = i;
    if (pick < 0) pick = int(matches_.size()) - 1;
  }
  current_match_ = pick;
  const auto [pos, len] = matches_[size_t(pick)];
  const int line = int(SendScintilla(SCI_LINEFROMPOSITION, pos));
  ensureLineVisible(line);
  SendScintilla(SCI_SETSEL, pos, pos + len);
  const int visible = int(SendScintilla(SCI_VISIBLEFROMDOCLINE, line));
  const int on_screen = int(SendScintilla(SCI_LINESONSCREEN));
  if (visible < firstVisibleLine() || visible >= firstVisibleLine() + on_screen)
    setFirstVisibleLine(std::max(0, visible - on_screen / 2));
  emit searchMoved(pick + 1, int(matches_.size()));
  return true;
}

bool CodeEditor::eventFilter(QObject* o, QEvent* e) {
  if (o == viewport() && e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    const int block = lineAt(he->pos());
    auto it = block >= 0 ? tips_.find(lineOf(block)) : tips_.end();
    if (it != tips_.end() && !it->second.isEmpty()) QToolTip::showText(he->globalPos(), it->second, this);
    else QToolTip::hideText();
    return true;
  }
  return QsciScintilla::eventFilter(o, e);
}

void CodeEditor::mouseReleaseEvent(QMouseEvent* e) {
  QsciScintilla::mouseReleaseEvent(e);
  if (!notice_ && e->button() == Qt::LeftButton) emit lineClicked(currentLineNumber());
}

}  // namespace kiln::viewer
