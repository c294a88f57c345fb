#pragma once
// Syntax colours for the code views: keywords, comments, strings and numbers
// of Python (output_code.py, programs), LLVM IR, x86 assembly, CUDA C++ and
// Kiln's loop IR, by a few regular expressions per language.
#include <QRegularExpression>
#include <QSyntaxHighlighter>
#include <QTextCharFormat>

#include <vector>

namespace kiln::viewer {

class CodeHighlighter : public QSyntaxHighlighter {
  Q_OBJECT
 public:
  CodeHighlighter(QTextDocument* doc, const QString& language);
  // The languages with rules; others get no colours.
  static bool knows(const QString& language);

 protected:
  void highlightBlock(const QString& text) override;

 private:
  struct Rule {
    QRegularExpression pattern;
    QTextCharFormat format;
  };
  std::vector<Rule> rules_;
  QRegularExpression block_start_, block_end_;  // C-style block comments (CUDA)
  QTextCharFormat comment_;
};

}  // namespace kiln::viewer
