#include "viewer/code_view.h"

#include <QCheckBox>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QShortcut>
#include <QToolButton>
#include <QVBoxLayout>

#include "viewer/code_editor.h"

namespace kiln::viewer {

CodeView::CodeView(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(2);
  auto* top = new QHBoxLayout;
  top->setContentsMargins(6, 2, 6, 0);
  bar_ = new QHBoxLayout;
  top->addLayout(bar_, 1);
  field_ = new QLineEdit(this);
  field_->setObjectName("code_find");
  field_->setPlaceholderText("Find in code (Ctrl+F)");
  field_->setToolTip("Every match is outlined; Enter or F3: next, Shift+Enter or Shift+F3: previous");
  field_->setClearButtonEnabled(true);
  field_->setMinimumWidth(110);
  field_->installEventFilter(this);
  prev_ = new QToolButton(this);
  prev_->setArrowType(Qt::UpArrow);
  prev_->setToolTip("Previous match (Shift+F3)");
  next_ = new QToolButton(this);
  next_->setArrowType(Qt::DownArrow);
  next_->setToolTip("Next match (F3)");
  case_ = new QCheckBox("Aa", this);
  case_->setToolTip("Match case");
  count_ = new QLabel(this);
  count_->setObjectName("code_find_count");
  count_->setMinimumWidth(60);
  top->addWidget(field_);
  top->addWidget(prev_);
  top->addWidget(next_);
  top->addWidget(case_);
  top->addWidget(count_);
  layout->addLayout(top);
  editor_ = new CodeEditor(this);
  layout->addWidget(editor_, 1);
  // Beside the graph the bar squeezes rather than take the graph's width.
  setMinimumWidth(240);

  connect(field_, &QLineEdit::textChanged, this, [this] { research(); });
  connect(case_, &QCheckBox::toggled, this, [this] { research(); });
  connect(prev_, &QToolButton::clicked, this, [this] { findNext(false); });
  connect(next_, &QToolButton::clicked, this, [this] { findNext(true); });
  connect(editor_, &CodeEditor::searchMoved, this, &CodeView::showCount);
  auto* f3 = new QShortcut(QKeySequence::FindNext, this, [this] { findNext(true); });
  f3->setContext(Qt::WidgetWithChildrenShortcut);
  auto* shift_f3 = new QShortcut(QKeySequence::FindPrevious, this, [this] { findNext(false); });
  shift_f3->setContext(Qt::WidgetWithChildrenShortcut);
}

void CodeView::openFind() {
  field_->setFocus(Qt::ShortcutFocusReason);
  field_->selectAll();
}

void CodeView::find(const QString& text) {
  if (field_->text() == text) research();
  else field_->setText(text);  // textChanged searches
}

void CodeView::research() {
  // A text replaced under the search (another stage) keeps the needle: the editor re-searches on setCode.
  if (editor_->setSearch(field_->text(), case_->isChecked()) > 0) editor_->searchNext(true);
}

void CodeView::findNext(bool forward) {
  if (editor_->searchText() != field_->text()) research();
  else editor_->searchNext(forward);
}

void CodeView::showCount(int index, int count) {
  QPalette p = field_->palette();
  p.setColor(QPalette::Base, field_->text().isEmpty() || count > 0 ? palette().color(QPalette::Base) : QColor(255, 220, 220));
  field_->setPalette(p);
  count_->setText(matchText());
  (void)index;
}

QString CodeView::matchText() const {
  if (editor_->searchText().isEmpty()) return {};
  const int count = editor_->searchCount();
  if (count == 0) return "no match";
  return editor_->searchIndex() > 0 ? QString("%1 of %2").arg(editor_->searchIndex()).arg(count) : QString("%1 matches").arg(count);
}

bool CodeView::eventFilter(QObject* o, QEvent* e) {
  if (o == field_ && e->type() == QEvent::KeyPress) {
    auto* k = static_cast<QKeyEvent*>(e);
    if (k->key() == Qt::Key_Return || k->key() == Qt::Key_Enter) {
      findNext(!(k->modifiers() & Qt::ShiftModifier));
      return true;
    }
    if (k->key() == Qt::Key_Escape) {
      editor_->setFocus();
      return true;
    }
  }
  return QWidget::eventFilter(o, e);
}

}  // namespace kiln::viewer
