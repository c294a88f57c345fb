#pragma once
// A read-only code view on QScintilla: line numbers, folding, marked lines (a
// colour and a tooltip per line), search with every match outlined, no
// wrapping unless asked. The source view, the centre's code view and both
// sides of the compare view's text diff are each one of these.
#include <Qsci/qsciscintilla.h>

#include <QColor>
#include <QString>

#include <map>
#include <vector>

namespace kiln::viewer {

class CodeHighlighter;

class CodeEditor : public QsciScintilla {
  Q_OBJECT
 public:
  explicit CodeEditor(QWidget* parent = nullptr);

  // Replaces the text; `language` picks the highlighter ("python", "llvm",
  // "asm", "cuda", "loopir"; anything else: none). Marks and search are cleared.
  void setCode(const QString& text, const QString& language);
  QString toPlainText() const { return text(); }
  // Line numbers shown in the margin instead of 1..N (a sparse listing of
  // known lines; 0 leaves a line unnumbered, as a diff's filler rows).
  void setLineNumbers(std::vector<int> numbers);
  // Instead of code, a short message (wrapped, greyed, no margins), e.g. that
  // the source of a dump is not on this machine. setCode clears it.
  void showNotice(const QString& text);
  bool showsNotice() const { return notice_; }
  // Long lines wrap at the panel's width (a margin number per source line) or scroll sideways.
  void setWrapLines(bool on);
  bool wrapsLines() const { return wrapMode() != QsciScintilla::WrapNone; }
  void markLine(int line, QColor colour, const QString& tooltip);
  void clearMarks();
  const std::map<int, QString>& markTooltips() const { return tips_; }
  // Scrolls to a line (1-based, in the margin's numbering), opening a fold around it, and puts the cursor there.
  void goToLine(int line);
  int currentLineNumber() const;
  QString currentLineText() const;
  int firstVisibleLineNumber() const;  // the margin's number of the top line on screen
  QString language() const { return language_; }
  bool hasLineNumbers() const;   // the number margin is shown and wide enough for the last number
  int foldPoints() const;        // lines that start a fold (a def, a kernel, a brace block)
  void foldAllPoints(bool fold); // every fold closed (true) or open

  // Search: every match of `needle` outlined; returns how many there are.
  int setSearch(const QString& needle, bool caseSensitive = false);
  // Selects the next (or previous) match from the cursor, wrapping round; false without matches.
  bool searchNext(bool forward = true);
  int searchCount() const { return int(matches_.size()); }
  int searchIndex() const { return current_match_ + 1; }  // 1-based; 0 before the first step
  QString searchText() const { return needle_; }

 signals:
  void lineClicked(int line);
  void searchMoved(int index, int count);

 protected:
  void mouseReleaseEvent(QMouseEvent* e) override;
  bool eventFilter(QObject* o, QEvent* e) override;

 private:
  int blockOf(int line) const;  // 0-based editor line of a margin number, -1 when none
  int lineOf(int block) const;
  int markerFor(QColor colour);
  void updateNumberMargin();
  void computeFolds();

  CodeHighlighter* lexer_ = nullptr;
  QString language_;
  std::vector<int> numbers_;
  std::map<int, QString> tips_;
  std::map<QRgb, int> markers_;  // colour -> background marker number
  bool notice_ = false;
  QString needle_;
  std::vector<std::pair<int, int>> matches_;  // byte position and length of each match
  int current_match_ = -1;
};

}  // namespace kiln::viewer
