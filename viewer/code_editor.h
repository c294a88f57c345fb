#pragma once
// A read-only text view with line numbers and marked lines (a colour and a
// tooltip per line): the source view and the code view are both one of these.
#include <QColor>
#include <QPlainTextEdit>
#include <QString>

#include <map>

class QSyntaxHighlighter;

namespace kiln::viewer {

class CodeEditor : public QPlainTextEdit {
  Q_OBJECT
 public:
  explicit CodeEditor(QWidget* parent = nullptr);

  // Replaces the text; `language` picks the highlighter ("python", "llvm",
  // "asm", "cuda", "loopir"; anything else: none). Marks are cleared.
  void setCode(const QString& text, const QString& language);
  // Line numbers shown in the gutter instead of 1..N (a sparse listing of known lines).
  void setLineNumbers(std::vector<int> numbers);
  // Instead of code, a short message (wrapped, greyed, not selectable), e.g.
  // that the source of a dump is not on this machine. setCode clears it.
  void showNotice(const QString& text);
  bool showsNotice() const { return notice_; }
  // Long lines wrap at the panel's width (a gutter number per source line) or scroll sideways.
  void setWrapLines(bool on);
  void markLine(int line, QColor colour, const QString& tooltip);
  void clearMarks();
  // Scrolls to a line (1-based, in the gutter's numbering) and puts the cursor there.
  void goToLine(int line);
  int currentLineNumber() const;
  const std::map<int, QString>& markTooltips() const { return tips_; }
  QString language() const { return language_; }

  int gutterWidth() const;
  void paintGutter(QPaintEvent* event);

 signals:
  void lineClicked(int line);

 protected:
  void resizeEvent(QResizeEvent* e) override;
  bool event(QEvent* e) override;
  void mouseReleaseEvent(QMouseEvent* e) override;

 private:
  int blockOf(int line) const;
  int lineOf(int block) const;
  void updateSelections();

  QWidget* gutter_;
  QSyntaxHighlighter* highlighter_ = nullptr;
  QString language_;
  std::vector<int> numbers_;
  std::map<int, QColor> marks_;
  std::map<int, QString> tips_;
  bool notice_ = false;
};

}  // namespace kiln::viewer
