#pragma once
// Syntax colours for the code views (a QScintilla lexer): keywords, comments,
// strings and numbers of Python (output_code.py, programs), LLVM IR, x86
// assembly, CUDA C++ and Kiln's loop IR, by a few regular expressions per
// language. Scintilla asks for the lines it is about to draw, so a 20,000-line
// output_code.py is styled as it is scrolled, not all at open.
#include <Qsci/qscilexercustom.h>

#include <QRegularExpression>

#include <vector>

namespace kiln::viewer {

class CodeHighlighter : public QsciLexerCustom {
  Q_OBJECT
 public:
  enum Style { Default = 0, Keyword, Type, Number, String, Comment, Name, Label, kStyles };
  CodeHighlighter(const QString& language, QObject* parent = nullptr);
  // The languages with rules; others get no colours.
  static bool knows(const QString& language);

  const char* language() const override { return language_.constData(); }
  QString description(int style) const override;
  QColor defaultColor(int style) const override;
  QFont defaultFont(int style) const override;
  void styleText(int start, int end) override;

 private:
  struct Rule {
    QRegularExpression pattern;
    Style style;
  };
  std::vector<Rule> rules_;
  QRegularExpression block_start_, block_end_;  // C-style block comments (CUDA)
  QByteArray language_;
  std::vector<char> in_block_;  // per line: it ends inside a block comment
};

}  // namespace kiln::viewer
