#include "core/python/code.h"

#include <cstdio>

#include "core/python/ast.h"

namespace kiln::py {

const char* op_name(Op op) {
  switch (op) {
    case Op::Nop: return "Nop";
    case Op::PopTop: return "PopTop";
    case Op::DupTop: return "DupTop";
    case Op::DupTopTwo: return "DupTopTwo";
    case Op::RotTwo: return "RotTwo";
    case Op::RotThree: return "RotThree";
    case Op::RotFour: return "RotFour";
    case Op::LoadConst: return "LoadConst";
    case Op::LoadFast: return "LoadFast";
    case Op::StoreFast: return "StoreFast";
    case Op::LoadDeref: return "LoadDeref";
    case Op::StoreDeref: return "StoreDeref";
    case Op::LoadClosure: return "LoadClosure";
    case Op::LoadGlobal: return "LoadGlobal";
    case Op::StoreGlobal: return "StoreGlobal";
    case Op::LoadName: return "LoadName";
    case Op::StoreName: return "StoreName";
    case Op::LoadAttr: return "LoadAttr";
    case Op::StoreAttr: return "StoreAttr";
    case Op::BinarySubscr: return "BinarySubscr";
    case Op::StoreSubscr: return "StoreSubscr";
    case Op::BuildSlice: return "BuildSlice";
    case Op::BinaryOp: return "BinaryOp";
    case Op::InplaceOp: return "InplaceOp";
    case Op::UnaryOp: return "UnaryOp";
    case Op::CompareOp: return "CompareOp";
    case Op::Jump: return "Jump";
    case Op::PopJumpIfFalse: return "PopJumpIfFalse";
    case Op::PopJumpIfTrue: return "PopJumpIfTrue";
    case Op::JumpIfFalseOrPop: return "JumpIfFalseOrPop";
    case Op::JumpIfTrueOrPop: return "JumpIfTrueOrPop";
    case Op::GetIter: return "GetIter";
    case Op::ForIter: return "ForIter";
    case Op::BuildTuple: return "BuildTuple";
    case Op::BuildList: return "BuildList";
    case Op::BuildMap: return "BuildMap";
    case Op::BuildString: return "BuildString";
    case Op::ListAppend: return "ListAppend";
    case Op::ListExtend: return "ListExtend";
    case Op::ListToTuple: return "ListToTuple";
    case Op::DictUpdate: return "DictUpdate";
    case Op::MapAdd: return "MapAdd";
    case Op::UnpackSequence: return "UnpackSequence";
    case Op::UnpackEx: return "UnpackEx";
    case Op::FormatValue: return "FormatValue";
    case Op::Call: return "Call";
    case Op::CallKw: return "CallKw";
    case Op::CallEx: return "CallEx";
    case Op::MakeFunction: return "MakeFunction";
    case Op::BuildClass: return "BuildClass";
    case Op::ReturnValue: return "ReturnValue";
    case Op::ImportName: return "ImportName";
    case Op::ImportModule: return "ImportModule";
    case Op::ImportFrom: return "ImportFrom";
    case Op::WithEnter: return "WithEnter";
    case Op::WithExit: return "WithExit";
    case Op::RaiseAssert: return "RaiseAssert";
    case Op::WithExceptExit: return "WithExceptExit";
    case Op::Raise: return "Raise";
    case Op::Reraise: return "Reraise";
    case Op::CheckExcMatch: return "CheckExcMatch";
    case Op::PopExcept: return "PopExcept";
    case Op::Yield: return "Yield";
    case Op::BuildSet: return "BuildSet";
    case Op::DeleteFast: return "DeleteFast";
    case Op::DeleteSubscr: return "DeleteSubscr";
    case Op::DeleteAttr: return "DeleteAttr";
  }
  return "?";
}

const char* binary_op_symbol(BinaryOpKind k) {
  switch (k) {
    case BinaryOpKind::Add: return "+";
    case BinaryOpKind::Sub: return "-";
    case BinaryOpKind::Mul: return "*";
    case BinaryOpKind::TrueDiv: return "/";
    case BinaryOpKind::FloorDiv: return "//";
    case BinaryOpKind::Mod: return "%";
    case BinaryOpKind::Pow: return "**";
    case BinaryOpKind::MatMul: return "@";
    case BinaryOpKind::LShift: return "<<";
    case BinaryOpKind::RShift: return ">>";
    case BinaryOpKind::And: return "&";
    case BinaryOpKind::Or: return "|";
    case BinaryOpKind::Xor: return "^";
  }
  return "?";
}

const char* compare_symbol(CompareKind k) {
  switch (k) {
    case CompareKind::Lt: return "<";
    case CompareKind::Le: return "<=";
    case CompareKind::Eq: return "==";
    case CompareKind::Ne: return "!=";
    case CompareKind::Gt: return ">";
    case CompareKind::Ge: return ">=";
    case CompareKind::In: return "in";
    case CompareKind::NotIn: return "not in";
    case CompareKind::Is: return "is";
    case CompareKind::IsNot: return "is not";
  }
  return "?";
}

namespace {

const std::string* entry(const std::vector<std::string>& table, int i) {
  return i >= 0 && size_t(i) < table.size() ? &table[size_t(i)] : nullptr;
}

std::string arg_text(const Code& code, const Instr& in) {
  int a = in.arg;
  auto named = [](const std::string* s) { return s ? *s : std::string("?"); };
  switch (in.op) {
    case Op::LoadConst:
      return a >= 0 && size_t(a) < code.consts.size() ? ast::const_repr(code.consts[size_t(a)]) : "?";
    case Op::LoadFast:
    case Op::StoreFast:
    case Op::DeleteFast: return named(entry(code.varnames, a));
    case Op::LoadDeref:
    case Op::StoreDeref:
    case Op::LoadClosure:
      if (a >= 0 && size_t(a) < code.cellvars.size()) return code.cellvars[size_t(a)];
      return named(entry(code.freevars, a - int(code.cellvars.size())));
    case Op::LoadGlobal:
    case Op::StoreGlobal:
    case Op::LoadName:
    case Op::StoreName:
    case Op::LoadAttr:
    case Op::StoreAttr:
    case Op::DeleteAttr:
    case Op::ImportName:
    case Op::ImportModule:
    case Op::ImportFrom: return named(entry(code.names, a));
    case Op::BinaryOp: return binary_op_symbol(BinaryOpKind(a));
    case Op::InplaceOp: return std::string(binary_op_symbol(BinaryOpKind(a))) + "=";
    case Op::UnaryOp:
      switch (UnaryOpKind(a)) {
        case UnaryOpKind::Neg: return "-";
        case UnaryOpKind::Pos: return "+";
        case UnaryOpKind::Not: return "not";
        case UnaryOpKind::Invert: return "~";
      }
      return "?";
    case Op::CompareOp: return compare_symbol(CompareKind(a));
    case Op::Jump:
    case Op::PopJumpIfFalse:
    case Op::PopJumpIfTrue:
    case Op::JumpIfFalseOrPop:
    case Op::JumpIfTrueOrPop:
    case Op::ForIter:
    case Op::WithExceptExit: return std::string("to ").append(std::to_string(a));
    case Op::MakeFunction: {
      std::string s;
      for (auto [bit, name] : {std::pair{1, "defaults"}, {2, "kwdefaults"}, {4, "annotations"}, {8, "closure"}})
        if (a & bit) s.append(s.empty() ? "" : "|").append(name);
      return s;
    }
    case Op::FormatValue: {
      std::string s = (a & 3) == 1 ? "str" : (a & 3) == 2 ? "repr" : "";
      if (a & 4) s += s.empty() ? "spec" : " spec";
      return s;
    }
    case Op::UnpackEx: return "before=" + std::to_string(a & 0xFF) + " after=" + std::to_string(a >> 8);
    case Op::BuildSlice:
    case Op::BuildTuple:
    case Op::BuildList:
    case Op::BuildMap:
    case Op::BuildString:
    case Op::ListAppend:
    case Op::ListExtend:
    case Op::DictUpdate:
    case Op::MapAdd:
    case Op::UnpackSequence:
    case Op::Call:
    case Op::CallKw:
    case Op::CallEx:
    case Op::BuildClass:
    case Op::Raise:
    case Op::Reraise:
    case Op::BuildSet:
    case Op::RaiseAssert: return std::to_string(a);
    default: return "";
  }
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

}  // namespace

std::string disassemble(const Code& code, bool recursive) {
  std::string out = "code " + code.qualname + " (" + code.filename + ":" + std::to_string(code.firstlineno) + ")";
  if (code.is_module) {
    out += " module";
  } else if (code.is_class_body) {
    out += " class-body";
  } else {
    out += " argcount=" + std::to_string(code.argcount);
    if (code.kwonlyargcount) out += " kwonly=" + std::to_string(code.kwonlyargcount);
    if (code.has_varargs) out += " varargs";
    if (code.has_varkw) out += " varkw";
    if (code.is_generator) out += " generator";
  }
  out += "\n";
  if (!code.varnames.empty()) out += "  varnames: " + join(code.varnames) + "\n";
  if (!code.cellvars.empty()) out += "  cellvars: " + join(code.cellvars) + "\n";
  if (!code.freevars.empty()) out += "  freevars: " + join(code.freevars) + "\n";
  for (size_t i = 0; i < code.code.size(); ++i) {
    const Instr& in = code.code[i];
    char index[32];
    std::snprintf(index, sizeof index, "%4zu ", i);
    std::string arg = arg_text(code, in);
    out += index + std::string(op_name(in.op)) + (arg.empty() ? "" : " " + arg) + " (line " +
           std::to_string(in.line) + ":" + std::to_string(in.col) + ")\n";
  }
  for (const ExceptEntry& e : code.exception_table)
    out += "  except " + std::to_string(e.start) + ".." + std::to_string(e.end) + " -> " + std::to_string(e.target) +
           " depth=" + std::to_string(e.depth) + " level=" + std::to_string(e.level) + "\n";
  for (const ExceptEntry& e : code.handled_ranges)
    out += "  handling " + std::to_string(e.start) + ".." + std::to_string(e.end) + " slot=" + std::to_string(e.depth) +
           " level=" + std::to_string(e.level) + "\n";
  if (recursive)
    for (const Const& c : code.consts)
      if (c.kind == Const::Kind::Code && c.code) out.append("\n").append(disassemble(*c.code, true));
  return out;
}

const ExceptEntry* Code::innermost(const std::vector<ExceptEntry>& table, int pc) {
  const ExceptEntry* best = nullptr;
  for (const ExceptEntry& e : table)
    if (pc >= e.start && pc < e.end && (!best || e.level > best->level)) best = &e;
  return best;
}

std::string source_line(const Code& code, int line) {
  if (!code.source_lines || line < 1 || size_t(line) > code.source_lines->size()) return {};
  const std::string& text = (*code.source_lines)[size_t(line) - 1];
  size_t b = text.find_first_not_of(" \t");
  return b == std::string::npos ? std::string() : text.substr(b);
}

}  // namespace kiln::py
