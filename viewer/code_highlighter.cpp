#include "viewer/code_highlighter.h"

#include <Qsci/qsciscintilla.h>

#include <QFontDatabase>
#include <QStringList>

namespace kiln::viewer {

namespace {

QString word_list(const QStringList& words) { return "\\b(" + words.join('|') + ")\\b"; }

}  // namespace

bool CodeHighlighter::knows(const QString& l) {
  return l == "python" || l == "llvm" || l == "asm" || l == "cuda" || l == "loopir";
}

CodeHighlighter::CodeHighlighter(const QString& language, QObject* parent)
    : QsciLexerCustom(parent), language_(language.toUtf8()) {
  auto add = [&](const QString& re, Style s) { rules_.push_back({QRegularExpression(re), s}); };
  const QString num = "\\b(0x[0-9a-fA-F]+|[0-9]+(\\.[0-9]*)?([eE][-+]?[0-9]+)?)\\b";
  if (language == "python") {
    add(word_list({"def", "class", "return", "if", "elif", "else", "for", "while", "in", "import", "from", "as", "with",
                   "not", "and", "or", "is", "None", "True", "False", "lambda", "pass", "yield", "try", "except",
                   "raise", "del", "global", "assert", "async", "await"}),
        Keyword);
    add("\\b(torch|aten|triton|tl|extern_kernels|self)\\b", Type);
    add(num, Number);
    add("(\"\"\"|'''|\"[^\"]*\"|'[^']*')", String);
    add("#[^\n]*", Comment);
  } else if (language == "llvm") {
    add(word_list({"define", "declare", "ret", "br", "call", "load", "store", "getelementptr", "inbounds", "phi", "icmp",
                   "fcmp", "add", "fadd", "sub", "fsub", "mul", "fmul", "fdiv", "sdiv", "udiv", "srem", "select",
                   "alloca", "label", "to", "align", "nsw", "nuw", "fast", "tail", "attributes", "private",
                   "internal", "global", "constant", "sext", "zext", "trunc", "sitofp", "fptosi", "bitcast",
                   "shufflevector", "insertelement", "extractelement", "unreachable", "switch"}),
        Keyword);
    add("\\b(void|i1|i8|i16|i32|i64|float|double|half|bfloat|ptr|<\\d+ x [a-z0-9]+>)\\b", Type);
    add("[%@][-a-zA-Z$._0-9]+", Name);
    add(num, Number);
    add("\"[^\"]*\"", String);
    add(";[^\n]*", Comment);
  } else if (language == "asm") {
    add("^\\s*[a-z][a-z0-9.]*", Keyword);
    add("%?\\b([re]?[abcd]x|[re]?[sd]i|[re]?[sb]p|r\\d+[dwb]?|[xyz]mm\\d+|k\\d)\\b", Type);
    add("^[^\\s#;]+:", Label);
    add("\\$?-?" + num, Number);
    add("\"[^\"]*\"", String);
    add("[#;][^\n]*", Comment);
  } else if (language == "cuda") {
    add(word_list({"__global__", "__device__", "__shared__", "extern", "if", "else", "for", "while", "return",
                   "const", "static", "inline", "struct", "template", "typename", "unsigned", "auto",
                   "__syncthreads", "__restrict__"}),
        Keyword);
    add(word_list({"void", "int", "long", "float", "double", "half", "bool", "int64_t", "int32_t", "size_t"}), Type);
    add(num, Number);
    add("\"[^\"]*\"", String);
    add("//[^\n]*", Comment);
    block_start_ = QRegularExpression("/\\*");
    block_end_ = QRegularExpression("\\*/");
  } else if (language == "loopir") {
    add(word_list({"pointwise", "reduction", "extern", "for", "in", "load", "store", "group", "kernel", "buffer",
                   "input", "output", "reduce", "where"}),
        Keyword);
    add("\\b(f16|bf16|f32|f64|i8|i16|i32|i64|u8|b8|bool)\\b", Type);
    add(num, Number);
    add("\"[^\"]*\"", String);
    add("(#|//)[^\n]*", Comment);
  }
}

QString CodeHighlighter::description(int style) const {
  static const char* names[] = {"Default", "Keyword", "Type", "Number", "String", "Comment", "Name", "Label"};
  return style >= 0 && style < kStyles ? names[style] : QString();
}

QColor CodeHighlighter::defaultColor(int style) const {
  switch (style) {
    case Keyword: return QColor(0, 70, 170);
    case Type: return QColor(120, 40, 150);
    case Number: return QColor(20, 130, 120);
    case String: return QColor(170, 60, 20);
    case Comment: return QColor(110, 120, 110);
    case Name: return QColor(150, 80, 0);
    case Label: return QColor(150, 80, 0);
    default: return QColor(30, 30, 30);
  }
}

QFont CodeHighlighter::defaultFont(int style) const {
  QFont f = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  f.setBold(style == Keyword || style == Label);
  f.setItalic(style == Comment);
  return f;
}

void CodeHighlighter::styleText(int start, int end) {
  QsciScintilla* e = editor();
  if (!e) return;
  int first = 0, last = 0, index = 0;
  e->lineIndexFromPosition(start, &first, &index);
  e->lineIndexFromPosition(std::max(start, end - 1), &last, &index);
  if (int(in_block_.size()) < e->lines()) in_block_.resize(size_t(e->lines()), 0);
  startStyling(int(e->positionFromLineIndex(first, 0)));
  for (int line = first; line <= last; ++line) {
    const QString text = e->text(line);
    std::vector<Style> styles(size_t(text.size()), Default);
    for (const Rule& r : rules_)
      for (auto it = r.pattern.globalMatch(text); it.hasNext();) {
        auto m = it.next();
        for (qsizetype i = m.capturedStart(); i < m.capturedEnd(); ++i) styles[size_t(i)] = r.style;
      }
    // Block comments may span lines: a line starts inside one when the line before ended inside it.
    bool inside = !block_start_.pattern().isEmpty() && line > 0 && in_block_[size_t(line - 1)];
    if (!block_start_.pattern().isEmpty()) {
      qsizetype from = inside ? 0 : text.indexOf(block_start_);
      while (from >= 0) {
        auto close = block_end_.match(text, inside ? from : from + 2);
        qsizetype to = close.hasMatch() ? close.capturedEnd() : text.size();
        inside = !close.hasMatch();
        for (qsizetype i = from; i < to; ++i) styles[size_t(i)] = Comment;
        from = inside ? -1 : text.indexOf(block_start_, to);
      }
      in_block_[size_t(line)] = inside;
    }
    // Scintilla counts bytes of UTF-8; runs of one style at a time.
    for (qsizetype i = 0; i < text.size();) {
      qsizetype j = i;
      while (j < text.size() && styles[size_t(j)] == styles[size_t(i)]) ++j;
      setStyling(int(text.mid(i, j - i).toUtf8().size()), styles[size_t(i)]);
      i = j;
    }
  }
}

}  // namespace kiln::viewer
