#pragma once
// The centre's code tab: a code editor under a bar with the workbench's code
// stage picker and a search field (Ctrl+F in the tab; Enter or F3 for the next
// match, Shift+Enter or Shift+F3 for the previous, "3 of 12" beside it).
#include <QWidget>

class QCheckBox;
class QHBoxLayout;
class QLabel;
class QLineEdit;
class QToolButton;

namespace kiln::viewer {

class CodeEditor;

class CodeView : public QWidget {
  Q_OBJECT
 public:
  explicit CodeView(QWidget* parent = nullptr);
  CodeEditor* editor() const { return editor_; }
  // Where the workbench puts its own controls, left of the search field.
  QHBoxLayout* bar() const { return bar_; }
  // Focuses the search field with its text selected (Ctrl+F).
  void openFind();
  void find(const QString& text);  // as if typed into the field
  void findNext(bool forward = true);
  QString matchText() const;  // "3 of 12", "no match", "" without a search
  QLineEdit* findField() const { return field_; }

 protected:
  bool eventFilter(QObject* o, QEvent* e) override;

 private:
  void research();
  void showCount(int index, int count);

  CodeEditor* editor_;
  QHBoxLayout* bar_;
  QLineEdit* field_;
  QToolButton* prev_;
  QToolButton* next_;
  QCheckBox* case_;
  QLabel* count_;
};

}  // namespace kiln::viewer
