#include "viewer/code_editor.h"

#include <QFontDatabase>
#include <QHelpEvent>
#include <QPainter>
#include <QTextBlock>
#include <QToolTip>

#include <algorithm>

#include "viewer/code_highlighter.h"

namespace kiln::viewer {

namespace {

class Gutter : public QWidget {
 public:
  explicit Gutter(CodeEditor* editor) : QWidget(editor), editor_(editor) {}
  QSize sizeHint() const override { return {editor_->gutterWidth(), 0}; }

 protected:
  void paintEvent(QPaintEvent* e) override { editor_->paintGutter(e); }

 private:
  CodeEditor* editor_;
};

}  // namespace

CodeEditor::CodeEditor(QWidget* parent) : QPlainTextEdit(parent) {
  setReadOnly(true);
  setLineWrapMode(QPlainTextEdit::NoWrap);
  setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
  gutter_ = new Gutter(this);
  connect(this, &QPlainTextEdit::blockCountChanged, this, [this] { setViewportMargins(notice_ ? 0 : gutterWidth(), 0, 0, 0); });
  connect(this, &QPlainTextEdit::updateRequest, this, [this](const QRect& rect, int dy) {
    if (dy) gutter_->scroll(0, dy);
    else gutter_->update(0, rect.y(), gutter_->width(), rect.height());
  });
  connect(this, &QPlainTextEdit::cursorPositionChanged, this, &CodeEditor::updateSelections);
  setViewportMargins(gutterWidth(), 0, 0, 0);
}

void CodeEditor::setCode(const QString& text, const QString& language) {
  notice_ = false;
  setPlaceholderText({});
  gutter_->show();
  delete highlighter_;
  highlighter_ = nullptr;
  numbers_.clear();
  marks_.clear();
  tips_.clear();
  language_ = language;
  setPlainText(text);
  if (CodeHighlighter::knows(language)) highlighter_ = new CodeHighlighter(document(), language);
  setViewportMargins(gutterWidth(), 0, 0, 0);
  updateSelections();
}

void CodeEditor::showNotice(const QString& text) {
  setCode({}, {});
  notice_ = true;
  updateSelections();
  // QPlainTextEdit draws its placeholder wrapped and greyed, and nothing in it can be selected.
  setPlaceholderText(text);
  gutter_->hide();
  setViewportMargins(0, 0, 0, 0);
}

void CodeEditor::setWrapLines(bool on) {
  setLineWrapMode(on ? QPlainTextEdit::WidgetWidth : QPlainTextEdit::NoWrap);
  // Wrapped lines break at spaces where they can, so code stays readable.
  setWordWrapMode(QTextOption::WrapAtWordBoundaryOrAnywhere);
  updateSelections();
}

void CodeEditor::setLineNumbers(std::vector<int> numbers) {
  numbers_ = std::move(numbers);
  setViewportMargins(gutterWidth(), 0, 0, 0);
  gutter_->update();
}

int CodeEditor::blockOf(int line) const {
  if (numbers_.empty()) return line - 1;
  auto it = std::find(numbers_.begin(), numbers_.end(), line);
  return it == numbers_.end() ? -1 : int(it - numbers_.begin());
}

int CodeEditor::lineOf(int block) const {
  if (numbers_.empty()) return block + 1;
  return block >= 0 && block < int(numbers_.size()) ? numbers_[size_t(block)] : 0;
}

void CodeEditor::markLine(int line, QColor colour, const QString& tooltip) {
  marks_[line] = colour;
  QString& tip = tips_[line];
  if (!tooltip.isEmpty()) tip += (tip.isEmpty() ? "" : "\n\n") + tooltip;
  updateSelections();
  gutter_->update();
}

void CodeEditor::clearMarks() {
  marks_.clear();
  tips_.clear();
  updateSelections();
  gutter_->update();
}

void CodeEditor::goToLine(int line) {
  int b = blockOf(line);
  if (b < 0) return;
  QTextCursor c(document()->findBlockByNumber(b));
  setTextCursor(c);
  centerCursor();
}

int CodeEditor::currentLineNumber() const { return lineOf(textCursor().blockNumber()); }

int CodeEditor::gutterWidth() const {
  int biggest = numbers_.empty() ? std::max(1, blockCount()) : *std::max_element(numbers_.begin(), numbers_.end());
  int digits = QString::number(std::max(1, biggest)).size();
  return 14 + fontMetrics().horizontalAdvance(QLatin1Char('9')) * std::max(3, digits);
}

void CodeEditor::resizeEvent(QResizeEvent* e) {
  QPlainTextEdit::resizeEvent(e);
  QRect cr = contentsRect();
  gutter_->setGeometry(QRect(cr.left(), cr.top(), gutterWidth(), cr.height()));
}

void CodeEditor::paintGutter(QPaintEvent* event) {
  QPainter p(gutter_);
  p.fillRect(event->rect(), palette().color(QPalette::AlternateBase));
  QTextBlock block = firstVisibleBlock();
  int number = block.blockNumber();
  int top = qRound(blockBoundingGeometry(block).translated(contentOffset()).top());
  int bottom = top + qRound(blockBoundingRect(block).height());
  int current = textCursor().blockNumber();
  while (block.isValid() && top <= event->rect().bottom()) {
    if (block.isVisible() && bottom >= event->rect().top()) {
      int line = lineOf(number);
      if (auto m = marks_.find(line); m != marks_.end()) p.fillRect(0, top, 5, bottom - top, m->second);
      p.setPen(number == current ? palette().color(QPalette::Text) : QColor(140, 140, 140));
      p.drawText(0, top, gutter_->width() - 6, fontMetrics().height(), Qt::AlignRight, line ? QString::number(line) : QString());
    }
    block = block.next();
    top = bottom;
    bottom = top + qRound(blockBoundingRect(block).height());
    ++number;
  }
}

void CodeEditor::updateSelections() {
  QList<QTextEdit::ExtraSelection> sels;
  for (const auto& [line, colour] : marks_) {
    int b = blockOf(line);
    if (b < 0) continue;
    QTextEdit::ExtraSelection s;
    QColor c = colour;
    c.setAlpha(55);
    s.format.setBackground(c);
    s.format.setProperty(QTextFormat::FullWidthSelection, true);
    // The whole block, so every row of a wrapped line is marked.
    s.cursor = QTextCursor(document()->findBlockByNumber(b));
    s.cursor.movePosition(QTextCursor::EndOfBlock, QTextCursor::KeepAnchor);
    sels.push_back(s);
  }
  if (notice_) {  // nothing to point at: no current line either
    setExtraSelections({});
    return;
  }
  QTextEdit::ExtraSelection cur;
  cur.format.setBackground(QColor(0, 120, 215, 28));
  cur.format.setProperty(QTextFormat::FullWidthSelection, true);
  cur.cursor = textCursor();
  cur.cursor.clearSelection();
  sels.push_back(cur);
  setExtraSelections(sels);
}

bool CodeEditor::event(QEvent* e) {
  if (e->type() == QEvent::ToolTip) {
    auto* he = static_cast<QHelpEvent*>(e);
    QPoint pos = viewport()->mapFromGlobal(he->globalPos());
    int line = lineOf(cursorForPosition(pos).blockNumber());
    auto it = tips_.find(line);
    if (it != tips_.end() && !it->second.isEmpty()) QToolTip::showText(he->globalPos(), it->second, this);
    else QToolTip::hideText();
    return true;
  }
  return QPlainTextEdit::event(e);
}

void CodeEditor::mouseReleaseEvent(QMouseEvent* e) {
  QPlainTextEdit::mouseReleaseEvent(e);
  emit lineClicked(currentLineNumber());
}

}  // namespace kiln::viewer
