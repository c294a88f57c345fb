#include "viewer/code_highlighter.h"

#include <QStringList>

namespace kiln::viewer {

namespace {

QTextCharFormat text_format(QColor colour, bool bold = false, bool italic = false) {
  QTextCharFormat f;
  f.setForeground(colour);
  if (bold) f.setFontWeight(QFont::Bold);
  f.setFontItalic(italic);
  return f;
}

QString word_list(const QStringList& words) { return "\\b(" + words.join('|') + ")\\b"; }

}  // namespace

bool CodeHighlighter::knows(const QString& l) {
  return l == "python" || l == "llvm" || l == "asm" || l == "cuda" || l == "loopir";
}

CodeHighlighter::CodeHighlighter(QTextDocument* doc, const QString& language) : QSyntaxHighlighter(doc) {
  const QTextCharFormat keyword = text_format(QColor(0, 70, 170), true);
  const QTextCharFormat type = text_format(QColor(120, 40, 150));
  const QTextCharFormat number = text_format(QColor(20, 130, 120));
  const QTextCharFormat string = text_format(QColor(170, 60, 20));
  comment_ = text_format(QColor(110, 120, 110), false, true);
  auto add = [&](const QString& re, const QTextCharFormat& f) { rules_.push_back({QRegularExpression(re), f}); };
  const QString num = "\\b(0x[0-9a-fA-F]+|[0-9]+(\\.[0-9]*)?([eE][-+]?[0-9]+)?)\\b";
  if (language == "python") {
    add(word_list({"def", "class", "return", "if", "elif", "else", "for", "while", "in", "import", "from", "as", "with",
                   "not", "and", "or", "is", "None", "True", "False", "lambda", "pass", "yield", "try", "except",
                   "raise", "del", "global", "assert", "async", "await"}),
        keyword);
    add("\\b(torch|aten|triton|tl|extern_kernels|self)\\b", type);
    add(num, number);
    add("(\"\"\"|'''|\"[^\"]*\"|'[^']*')", string);
    add("#[^\n]*", comment_);
  } else if (language == "llvm") {
    add(word_list({"define", "declare", "ret", "br", "call", "load", "store", "getelementptr", "inbounds", "phi", "icmp",
                   "fcmp", "add", "fadd", "sub", "fsub", "mul", "fmul", "fdiv", "sdiv", "udiv", "srem", "select",
                   "alloca", "label", "to", "align", "nsw", "nuw", "fast", "tail", "attributes", "private",
                   "internal", "global", "constant", "sext", "zext", "trunc", "sitofp", "fptosi", "bitcast",
                   "shufflevector", "insertelement", "extractelement", "unreachable", "switch"}),
        keyword);
    add("\\b(void|i1|i8|i16|i32|i64|float|double|half|bfloat|ptr|<\\d+ x [a-z0-9]+>)\\b", type);
    add("[%@][-a-zA-Z$._0-9]+", text_format(QColor(150, 80, 0)));
    add(num, number);
    add("\"[^\"]*\"", string);
    add(";[^\n]*", comment_);
  } else if (language == "asm") {
    add("^\\s*[a-z][a-z0-9.]*", keyword);
    add("%?\\b([re]?[abcd]x|[re]?[sd]i|[re]?[sb]p|r\\d+[dwb]?|[xyz]mm\\d+|k\\d)\\b", type);
    add("^[^\\s#;]+:", text_format(QColor(150, 80, 0), true));
    add("\\$?-?" + num, number);
    add("\"[^\"]*\"", string);
    add("[#;][^\n]*", comment_);
  } else if (language == "cuda") {
    add(word_list({"__global__", "__device__", "__shared__", "extern", "if", "else", "for", "while", "return",
                   "const", "static", "inline", "struct", "template", "typename", "unsigned", "auto",
                   "__syncthreads", "__restrict__"}),
        keyword);
    add(word_list({"void", "int", "long", "float", "double", "half", "bool", "int64_t", "int32_t", "size_t"}), type);
    add(num, number);
    add("\"[^\"]*\"", string);
    add("//[^\n]*", comment_);
    block_start_ = QRegularExpression("/\\*");
    block_end_ = QRegularExpression("\\*/");
  } else if (language == "loopir") {
    add(word_list({"pointwise", "reduction", "extern", "for", "in", "load", "store", "group", "kernel", "buffer",
                   "input", "output", "reduce", "where"}),
        keyword);
    add("\\b(f16|bf16|f32|f64|i8|i16|i32|i64|u8|b8|bool)\\b", type);
    add(num, number);
    add("\"[^\"]*\"", string);
    add("(#|//)[^\n]*", comment_);
  }
}

void CodeHighlighter::highlightBlock(const QString& text) {
  for (const Rule& r : rules_) {
    auto it = r.pattern.globalMatch(text);
    while (it.hasNext()) {
      auto m = it.next();
      setFormat(int(m.capturedStart()), int(m.capturedLength()), r.format);
    }
  }
  if (block_start_.pattern().isEmpty()) return;
  // Block comments may span lines: state 1 means "inside one".
  setCurrentBlockState(0);
  int start = previousBlockState() == 1 ? 0 : int(text.indexOf(block_start_));
  while (start >= 0) {
    auto end = block_end_.match(text, start);
    int len;
    if (!end.hasMatch()) {
      setCurrentBlockState(1);
      len = int(text.length()) - start;
    } else {
      len = int(end.capturedEnd()) - start;
    }
    setFormat(start, len, comment_);
    start = int(text.indexOf(block_start_, start + len));
  }
}

}  // namespace kiln::viewer
