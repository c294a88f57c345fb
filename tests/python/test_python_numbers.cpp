// Python's numbers in Kiln's interpreter, against CPython: ints past int64
// (arithmetic, the signs of // and %, shifts and bitwise operators, pow),
// conversions (int(), float(), round(), hex()), exact int/float comparison
// and hashing, the format mini-language of format(), str.format and
// f-strings, int literals of any size, the integer functions of math, and
// the errors with CPython's messages.
//
// Every expected text in the tables was printed by CPython 3.11.7 (python3 on
// the build machine) for print(repr(<expression>)), and CPython 3.12.3 (the
// Python PyTorch 2.11 runs on) printed the same for all of them; an error is
// CPython's "Type: message" line. kSums is from 3.12.3 alone; kLiterals,
// kMath and kFStringAscii from 3.11.7 alone.
#include <QtTest/QtTest>

#include <random>
#include <string>

#include "core/python/bigint.h"
#include "core/python/vm.h"

using namespace kiln::py;

namespace {

struct Case {
  const char* expr;
  const char* expected;
};

// repr(expr) as the program prints it, or the last traceback line of the
// error it raised ("ZeroDivisionError: integer modulo by zero").
std::string evaluate(const std::string& expr, int& exit_code, const std::string& prelude = "") {
  std::string out, err;
  VMOptions options;
  options.out = [&out](std::string_view s) { out += s; };
  options.err = [&err](std::string_view s) { err += s; };
  VM vm(options);
  exit_code = -1;
  kiln::Status status = vm.run_source(prelude + "print(repr(" + expr + "))\n", "case.py", &exit_code);
  if (exit_code == 0) return out.substr(0, out.find_last_not_of('\n') + 1);
  if (err.empty()) return status.message();  // refused before running: no traceback
  std::string text = err.substr(0, err.find_last_not_of('\n') + 1);
  return text.substr(text.rfind('\n') + 1);
}

template <size_t N>
void check_cases(const Case (&cases)[N], const std::string& prelude = "") {
  QStringList failures;
  for (const Case& c : cases) {
    int exit_code = 0;
    std::string got = evaluate(c.expr, exit_code, prelude);
    bool is_error = std::string_view(c.expected).find("Error: ") != std::string_view::npos;
    if (got != c.expected || (is_error ? exit_code != 1 : exit_code != 0))
      failures << QString::fromStdString(std::string(c.expr) + "\n    expected: " + c.expected + "\n    got:      " + got +
                                         " (exit " + std::to_string(exit_code) + ")");
  }
  if (!failures.isEmpty())
    QFAIL(qPrintable(QString("%1 of %2 cases differ from CPython:\n").arg(failures.size()).arg(N) + failures.join('\n')));
}

const Case kBigArithmetic[] = {
    {"2**63", "9223372036854775808"},
    {"-2**63", "-9223372036854775808"},
    {"2**63 - 1 + 1", "9223372036854775808"},
    {"9223372036854775807 + 1", "9223372036854775808"},
    {"-9223372036854775807 - 2", "-9223372036854775809"},
    {"3037000500 * 3037000500", "9223372037000250000"},
    {"2**62 * 4", "18446744073709551616"},
    {"(-9223372036854775807 - 1) * -1", "9223372036854775808"},
    {"-(-9223372036854775807 - 1)", "9223372036854775808"},
    {"abs(-9223372036854775807 - 1)", "9223372036854775808"},
    {"2**64 - 2**64", "0"},
    {"type(2**64 - 2**64) is int", "True"},
    {"2**64 // 2**64", "1"},
    {"2**64 + 1", "18446744073709551617"},
    {"2**64 - 1", "18446744073709551615"},
    {"-2**64 + 2**63", "-9223372036854775808"},
    {"2**100 + 2**100", "2535301200456458802993406410752"},
    {"2**100 - 2**101", "-1267650600228229401496703205376"},
    {"2**64 * 2**64", "340282366920938463463374607431768211456"},
    {"(2**128 - 1) * (2**128 + 1)", "115792089237316195423570985008687907853269984665640564039457584007913129639935"},
    {"(10**20 + 1) * (10**20 - 1)", "9999999999999999999999999999999999999999"},
    {"-(10**30) * 10**30", "-1000000000000000000000000000000000000000000000000000000000000"},
    {"2**64 * 0", "0"},
    {"2**64 * -1", "-18446744073709551616"},
    {"-(2**64)", "-18446744073709551616"},
    {"+(2**64)", "18446744073709551616"},
    {"abs(-2**70)", "1180591620717411303424"},
    {"abs(2**70)", "1180591620717411303424"},
    {"sum([2**62, 2**62, 2**62])", "13835058055282163712"},
    {"sum([2**63, 2**63, -2**64])", "0"},
    {"10**20", "100000000000000000000"},
    {"10**20 - 1", "99999999999999999999"},
    {"str(2**200)", "'1606938044258990275541962092341162602522202993782792835301376'"},
    {"repr(-2**200)", "'-1606938044258990275541962092341162602522202993782792835301376'"},
    {"[2**64, -2**64, (2**65,)]", "[18446744073709551616, -18446744073709551616, (36893488147419103232,)]"},
    {"{2**64: 2**65}", "{18446744073709551616: 36893488147419103232}"},
    {"bool(2**64)", "True"},
    {"not 2**64", "False"},
    {"2**64 and 5", "5"},
    {"0 or 2**64", "18446744073709551616"},
    {"10**20 * 1.5", "1.5e+20"},
    {"1.5 * 10**20", "1.5e+20"},
    {"10**20 + 0.5", "1e+20"},
    {"2**64 + 1.0", "1.8446744073709552e+19"},
    {"1.5 - 2**64", "-1.8446744073709552e+19"},
    {"10**20 / 4", "2.5e+19"},
    {"~(2**64)", "-18446744073709551617"},
    {"~(-2**64)", "18446744073709551615"},
    {"1 << 63", "9223372036854775808"},
    {"1 << 64", "18446744073709551616"},
    {"-1 << 63", "-9223372036854775808"},
    {"1 << 100", "1267650600228229401496703205376"},
    {"(-1) << 100", "-1267650600228229401496703205376"},
    {"2**64 >> 1", "9223372036854775808"},
    {"2**64 >> 64", "1"},
    {"2**64 >> 65", "0"},
    {"-(2**64) >> 65", "-1"},
    {"-(2**64) >> 1", "-9223372036854775808"},
    {"-(2**100) >> 3", "-158456325028528675187087900672"},
    {"-(2**100 + 1) >> 3", "-158456325028528675187087900673"},
    {"3 >> 70", "0"},
    {"-3 >> 70", "-1"},
    {"2**64 & (2**64 - 1)", "0"},
    {"(2**64 + 5) & 7", "5"},
    {"(2**100) & -1", "1267650600228229401496703205376"},
    {"-(2**64) | 1", "-18446744073709551615"},
    {"(-2**100) | 5", "-1267650600228229401496703205371"},
    {"(-2**100) & 0xffff", "0"},
    {"-(2**64) ^ -1", "18446744073709551615"},
    {"(2**100) ^ (2**99)", "1901475900342344102245054808064"},
    {"(2**64) ^ (2**64)", "0"},
    {"True & True", "True"},
    {"True | False", "True"},
    {"True ^ True", "False"},
    {"True + True", "2"},
    {"True * 10**19", "10000000000000000000"},
    {"-True", "-1"},
    {"~True", "-2"},
};

const Case kDivisionSigns[] = {
    {"7 // 2", "3"},
    {"-7 // 2", "-4"},
    {"7 // -2", "-4"},
    {"-7 // -2", "3"},
    {"7 % 3", "1"},
    {"-7 % 3", "2"},
    {"7 % -3", "-2"},
    {"-7 % -3", "-1"},
    {"divmod(7, 2)", "(3, 1)"},
    {"divmod(-7, 2)", "(-4, 1)"},
    {"divmod(7, -2)", "(-4, -1)"},
    {"divmod(-7, -2)", "(3, -1)"},
    {"(-9223372036854775807 - 1) // -1", "9223372036854775808"},
    {"(-9223372036854775807 - 1) % -1", "0"},
    {"divmod(-9223372036854775807 - 1, -1)", "(9223372036854775808, 0)"},
    {"divmod(2**64, 3)", "(6148914691236517205, 1)"},
    {"divmod(-2**64, 3)", "(-6148914691236517206, 2)"},
    {"divmod(2**64, -3)", "(-6148914691236517206, -2)"},
    {"divmod(-2**64, -3)", "(6148914691236517205, -1)"},
    {"divmod(2**64, 2**32)", "(4294967296, 0)"},
    {"(2**64) % 7", "2"},
    {"(-2**64) % 7", "5"},
    {"(2**64) % -7", "-5"},
    {"(-2**64) // 7", "-2635249153387078803"},
    {"divmod(-2**70, 3**20)", "(-338590370079, 2863034255)"},
    {"10**20 // 3", "33333333333333333333"},
    {"-(10**20) // 3", "-33333333333333333334"},
    {"(2**128) // 2**64", "18446744073709551616"},
    {"(2**128 + 1) % 2**64", "1"},
    {"(2**128 - 1) // (2**64 - 1)", "18446744073709551617"},
    {"(10**50 + 7) // (10**25 + 3)", "9999999999999999999999997"},
    {"(10**50 + 7) % (10**25 + 3)", "16"},
    {"-(10**50 + 7) // (10**25 + 3)", "-9999999999999999999999998"},
    {"-(10**50 + 7) % (10**25 + 3)", "9999999999999999999999987"},
    {"(10**50 + 7) // -(10**25 + 3)", "-9999999999999999999999998"},
    {"(10**50 + 7) % -(10**25 + 3)", "-9999999999999999999999987"},
    {"(2**96 - 1) // (2**64 - 1)", "4294967296"},
    {"(2**96 - 1) % (2**64 - 1)", "4294967295"},
    {"(2**192 - 2**100 + 12345) // (2**128 - 2**31)", "18446744073709551615"},
    {"(2**192 - 2**100 + 12345) % (2**128 - 2**31)", "340282365692901944492277374729689509945"},
    {"(0x7fffffff80000000 * 2**64) // (0x80000000 * 2**64 + 1)", "4294967294"},
    {"(0x7fffffff80000000 * 2**64) % (0x80000000 * 2**64 + 1)", "39614081257132168792477007874"},
    {"3**500 // 7**100",
     "1124147653806526209052014144609293074301858045411580964411122029383079"
     "0737026411651251414110528931175632015024873837878940186837610183085210"
     "798276054427946"},
    {"3**500 % 7**100", "1204253512422783957378962909312068963540723736861214357085225616702974881463758422055"},
    {"-(3**500) // 7**100",
     "-112414765380652620905201414460929307430185804541158096441112202938307"
     "9073702641165125141411052893117563201502487383787894018683761018308521"
     "0798276054427947"},
    {"7 / 2", "3.5"},
    {"-7 / 2", "-3.5"},
    {"1 / 3", "0.3333333333333333"},
    {"0 / -3", "-0.0"},
    {"0 / -10**20", "-0.0"},
    {"2**64 / 2**64", "1.0"},
    {"(2**53 + 1) / 1", "9007199254740992.0"},
    {"(2**60 + 1) / 3", "3.843071682022823e+17"},
    {"10**30 / 10**10", "1e+20"},
    {"10**30 / 7", "1.4285714285714285e+29"},
    {"-10**30 / 7", "-1.4285714285714285e+29"},
    {"1 / 10**400", "0.0"},
    {"10**400 / 10**399", "10.0"},
    {"7.5 // 2", "3.0"},
    {"-7.5 // 2", "-4.0"},
    {"7.5 % 2", "1.5"},
    {"-7.5 % 2", "0.5"},
    {"7.5 % -2", "-0.5"},
    {"7 // 0.5", "14.0"},
    {"1 // 0.1", "9.0"},
    {"1 % 0.1", "0.09999999999999995"},
    {"-1 // 0.1", "-10.0"},
    {"0.1 % 0.01", "3.469446951953614e-18"},
    {"-1e-300 % 1", "1.0"},
    {"-0.0 % 5", "0.0"},
    {"0.0 % -5", "-0.0"},
    {"divmod(7.5, 2)", "(3.0, 1.5)"},
    {"divmod(-7.5, 2)", "(-4.0, 0.5)"},
    {"divmod(7.5, -2)", "(-4.0, -0.5)"},
    {"divmod(0.0, -3)", "(-0.0, -0.0)"},
    {"divmod(-0.0, 3)", "(-0.0, 0.0)"},
    {"divmod(1, 0.1)", "(9.0, 0.09999999999999995)"},
    {"2**64 // 1.5", "1.2297829382473034e+19"},
    {"2**64 % 1.5", "1.0"},
    {"divmod(2**64, 1.5)", "(1.2297829382473034e+19, 1.0)"},
    {"-0.0 / 5", "-0.0"},
};

const Case kPowers[] = {
    {"2**62", "4611686018427387904"},
    {"2**63", "9223372036854775808"},
    {"2**64", "18446744073709551616"},
    {"2**1000",
     "1071508607186267320948425049060001810561404811705533607443750388370351"
     "0511249361224931983788156958581275946729175531468251871452856923140435"
     "9845775746985748039345677748242309854210746050623711418779541821530464"
     "7498358194126739876755916554394607706291457119647768654216766042983165"
     "2624386837205668069376"},
    {"3**200 % 1000", "1"},
    {"(-3)**41", "-36472996377170786403"},
    {"(-2)**63", "-9223372036854775808"},
    {"(-2)**64", "18446744073709551616"},
    {"2**-1", "0.5"},
    {"4**-2", "0.0625"},
    {"(-4)**-1", "-0.25"},
    {"0**0", "1"},
    {"0.0**0", "1.0"},
    {"10**-20", "1e-20"},
    {"2**0.5", "1.4142135623730951"},
    {"2.0**0.5", "1.4142135623730951"},
    {"(-2)**2", "4"},
    {"(-2.0)**2", "4.0"},
    {"1.5**1000", "1.2338405969061735e+176"},
    {"float('inf')**2", "inf"},
    {"float('nan')**0", "1.0"},
    {"1**float('nan')", "1.0"},
    {"(-1)**float('inf')", "1.0"},
    {"10.0**308", "1e+308"},
    {"1**(2**100)", "1"},
    {"(-1)**(2**100 + 1)", "-1"},
    {"0**(2**100)", "0"},
    {"pow(2, 10)", "1024"},
    {"pow(2, 10, 1000)", "24"},
    {"pow(-2, 3, 5)", "2"},
    {"pow(2, 3, -5)", "-2"},
    {"pow(3, -1, 11)", "4"},
    {"pow(2**100, 2**100, 10**9 + 7)", "639253612"},
    {"pow(7, 2**70, 13)", "9"},
    {"pow(-7, 3, -13)", "-5"},
    {"pow(10**30, 3, 10**20 + 39)", "23134410000000000"},
};

const Case kConversions[] = {
    {"int(3.99)", "3"},
    {"int(-3.99)", "-3"},
    {"int(-0.5)", "0"},
    {"int(1e19)", "10000000000000000000"},
    {"int(-1e19)", "-10000000000000000000"},
    {"int(1e20)", "100000000000000000000"},
    {"int(-1e300) % 10**9", "599459840"},
    {"int(1.7976931348623157e308) % 10**9", "124858368"},
    {"int('  42  ')", "42"},
    {"int('-0x1f', 16)", "-31"},
    {"int('1_000_000')", "1000000"},
    {"int('0b1_0', 0)", "2"},
    {"int('0o17', 0)", "15"},
    {"int('0x_ff', 16)", "255"},
    {"int('0x_ff', 0)", "255"},
    {"int('00', 0)", "0"},
    {"int(' -1_000 ')", "-1000"},
    {"int('zz', 36)", "1295"},
    {"int('Z', 36)", "35"},
    {"int('99999999999999999999999999')", "99999999999999999999999999"},
    {"int('-99999999999999999999999999')", "-99999999999999999999999999"},
    {"int('1' * 4300) % 7", "5"},
    {"int('ff' * 20, 16)", "1461501637330902918203684832716283019655932542975"},
    {"int('10', base=2)", "2"},
    {"int('-0')", "0"},
    {"int(' +7 ')", "7"},
    {"int(True)", "1"},
    {"int(2**70)", "1180591620717411303424"},
    {"int()", "0"},
    {"float('1e3')", "1000.0"},
    {"float('  -1.5e-3  ')", "-0.0015"},
    {"float('.5')", "0.5"},
    {"float('5.')", "5.0"},
    {"float('1_000.000_1')", "1000.0001"},
    {"float('inf')", "inf"},
    {"float(' -iNfinity ')", "-inf"},
    {"float('nAn')", "nan"},
    {"float('1e400')", "inf"},
    {"float('-1e400')", "-inf"},
    {"float('1e-400')", "0.0"},
    {"float(2**64)", "1.8446744073709552e+19"},
    {"float(2**1023)", "8.98846567431158e+307"},
    {"float(2**64 + 1)", "1.8446744073709552e+19"},
    {"float(2**54 + 1)", "1.8014398509481984e+16"},
    {"float(2**54 + 3)", "1.8014398509481988e+16"},
    {"float(2**1024 - 2**970 - 1)", "1.7976931348623157e+308"},
    {"float(-(2**200 + 2**147))", "-1.6069380442589903e+60"},
    {"float(-(2**200 + 2**147 + 1))", "-1.6069380442589906e+60"},
    {"float(True)", "1.0"},
    {"float()", "0.0"},
    {"round(2.5)", "2"},
    {"round(3.5)", "4"},
    {"round(-2.5)", "-2"},
    {"round(0.5)", "0"},
    {"round(-0.5)", "0"},
    {"round(-0.4)", "0"},
    {"round(2.675, 2)", "2.67"},
    {"round(1.005, 2)", "1.0"},
    {"round(12345.678, -2)", "12300.0"},
    {"round(12345.678, -5)", "0.0"},
    {"round(12355, -1)", "12360"},
    {"round(12345, -1)", "12340"},
    {"round(-12345, -1)", "-12340"},
    {"round(15, -1)", "20"},
    {"round(25, -1)", "20"},
    {"round(-25, -1)", "-20"},
    {"round(5, 2)", "5"},
    {"round(5.0, 2)", "5.0"},
    {"round(1.5, None)", "2"},
    {"round(2**70 + 2**69, -20)", "1800000000000000000000"},
    {"round(10**20 + 5, -1)", "100000000000000000000"},
    {"round(1e20)", "100000000000000000000"},
    {"round(1.23e25)", "12300000000000000276824064"},
    {"round(1e300, -300)", "1e+300"},
    {"round(0.1, 0)", "0.0"},
    {"round(-0.1, 0)", "-0.0"},
    {"round(True)", "1"},
    {"round(True, 2)", "1"},
    {"abs(-0.0)", "0.0"},
    {"abs(float('-inf'))", "inf"},
    {"abs(True)", "1"},
    {"str(-0.0)", "'-0.0'"},
    {"repr(1e16)", "'1e+16'"},
    {"repr(1e15)", "'1000000000000000.0'"},
    {"repr(123456789012345678.0)", "'1.2345678901234568e+17'"},
    {"1e-5", "1e-05"},
    {"0.0001", "0.0001"},
    {"1e22", "1e+22"},
    {"0.1 + 0.2", "0.30000000000000004"},
    {"-float('nan')", "nan"},
    {"hex(255)", "'0xff'"},
    {"hex(-255)", "'-0xff'"},
    {"hex(2**70)", "'0x400000000000000000'"},
    {"hex(True)", "'0x1'"},
    {"oct(8)", "'0o10'"},
    {"bin(-5)", "'-0b101'"},
    {"bin(2**65)", "'0b100000000000000000000000000000000000000000000000000000000000000000'"},
};

const Case kComparisons[] = {
    {"2**53 + 1 == float(2**53)", "False"},
    {"2**53 + 1 > float(2**53)", "True"},
    {"2**53 == 2.0**53", "True"},
    {"2**70 == 2.0**70", "True"},
    {"2**70 + 1 == 2.0**70", "False"},
    {"2**70 > 2.0**70", "False"},
    {"2**70 + 1 > 2.0**70", "True"},
    {"-2**70 - 1 < -2.0**70", "True"},
    {"10**20 == 1e20", "True"},
    {"10**400 > 1e308", "True"},
    {"10**400 < float('inf')", "True"},
    {"-10**400 < float('-inf')", "False"},
    {"10**400 == float('nan')", "False"},
    {"10**400 > float('nan')", "False"},
    {"9223372036854775807 == 9223372036854775808.0", "False"},
    {"9223372036854775807 < 9223372036854775808.0", "True"},
    {"9223372036854775807 + 1 == 9223372036854775808.0", "True"},
    {"1.5 > 1", "True"},
    {"1 < 1.5", "True"},
    {"-0.0 == 0", "True"},
    {"2**64 > 2**63", "True"},
    {"-2**64 < -2**63", "True"},
    {"2**64 == 2**64 + 0", "True"},
    {"2**64 != 2**65", "True"},
    {"[2**64] == [2**64]", "True"},
    {"(2**64, 1) < (2**64, 2)", "True"},
    {"{2**64: 'a'}[2**64]", "'a'"},
    {"{2**64: 'a'}[2.0**64]", "'a'"},
    {"{1e20: 'f'}[10**20]", "'f'"},
    {"{1: 'a'}[1.0]", "'a'"},
    {"{1.0: 'a'}[True]", "'a'"},
    {"max(1, 2**70, 2.5)", "1180591620717411303424"},
    {"min(-2**70, -1e30)", "-1e+30"},
    {"sorted([3, 2**65, -2**65, 1.5, -1e30])", "[-1e+30, -36893488147419103232, 1.5, 3, 36893488147419103232]"},
    {"2**70 in [2**70]", "True"},
    {"2**70 in range(10)", "False"},
    {"isinstance(2**70, int)", "True"},
};

const Case kFormatting[] = {
    {"format(10**20)", "'100000000000000000000'"},
    {"format(-10**20, ',')", "'-100,000,000,000,000,000,000'"},
    {"format(10**20, '_x')", "'5_6bc7_5e2d_6310_0000'"},
    {"format(10**20, '#X')", "'0X56BC75E2D63100000'"},
    {"format(10**20, '030,')", "'00,100,000,000,000,000,000,000'"},
    {"format(10**20, '.2e')", "'1.00e+20'"},
    {"format(10**20, '%')", "'10000000000000000000000.000000%'"},
    {"format(2**70, '>40')", "'                  1180591620717411303424'"},
    {"format(2**70, '040_')", "'0_000_000_001_180_591_620_717_411_303_424'"},
    {"format(-10**25, '_d')", "'-10_000_000_000_000_000_000_000_000'"},
    {"format(10**30, 'x')", "'c9f2c9cd04674edea40000000'"},
    {"format(2**100, 'e')", "'1.267651e+30'"},
    {"format(-2**63, ',')", "'-9,223,372,036,854,775,808'"},
    {"format(2**63 - 1, '_')", "'9_223_372_036_854_775_807'"},
    {"format(True, 'd')", "'1'"},
    {"format(True)", "'True'"},
    {"format(None)", "'None'"},
    {"format(3.5)", "'3.5'"},
    {"format(-0.0)", "'-0.0'"},
    {"format(-0.0, 'z.1f')", "'0.0'"},
    {"format(1e16, '.3')", "'1e+16'"},
    {"format(1234.5, 'n')", "'1234.5'"},
    {"format(1234, 'n')", "'1234'"},
    {"format(0.1, '.17g')", "'0.10000000000000001'"},
    {"format(0.1, '.20f')", "'0.10000000000000000555'"},
    {"format(12345.6789, ',.2f')", "'12,345.68'"},
    {"format('ab', '>4')", "'  ab'"},
    {"format(3.14159, '.2f')", "'3.14'"},
    {"format(3.14159, '10.3f')", "'     3.142'"},
    {"format(-3.14159, '+.1f')", "'-3.1'"},
    {"format(1234567.891, '_.2f')", "'1_234_567.89'"},
    {"format(255, '#x') + format(255, '#o') + format(255, '#b')", "'0xff0o3770b11111111'"},
    {"format(-255, '#010x')", "'-0x00000ff'"},
    {"format(42, '*^10')", "'****42****'"},
    {"format(42, '=+10')", "'+       42'"},
    {"format('abc', '^9.2')", "'   ab    '"},
    {"format(1e-7, 'g') + ' ' + format(1e16, 'g') + ' ' + format(123456789, 'g')", "'1e-07 1e+16 1.23457e+08'"},
    {"format(0.5, '%') + format(0.125, '.0%') + format(1, '%')", "'50.000000%12%100.000000%'"},
    {"format(float('nan'), 'f') + format(-float('inf'), '10.2f')", "'nan      -inf'"},
    {"format(2.5, '.0f') + format(1.5, '.0f') + format(2.675, '.2f')", "'222.67'"},
    {"format(123.456, '#.5g') + format(100.0, '#g')", "'123.46100.000'"},
    {"format(65, 'c')", "'A'"},
    {"\"{} {}\".format(1, 2)", "'1 2'"},
    {"\"{1} {0}\".format('a', 'b')", "'b a'"},
    {"\"{x} {y:.1f}\".format(x=1, y=2.25)", "'1 2.2'"},
    {"\"{:>{w}}|\".format('ab', w=6)", "'    ab|'"},
    {"\"{:{fill}{align}{w}.{p}f}\".format(3.14159, fill='*', align='<', w=10, p=2)", "'3.14******'"},
    {"\"{0[1]} {0[0]}\".format([5, 6])", "'6 5'"},
    {"\"{d[key]}\".format(d={'key': 7})", "'7'"},
    {"\"{{}} {{{}}}\".format(3)", "'{} {3}'"},
    {"\"{!r:>6}|\".format('hi')", "\"  'hi'|\""},
    {"\"{!a}\".format('h\\u00e9llo \\u2603')", "\"'h\\\\xe9llo \\\\u2603'\""},
    {"\"{:,}\".format(10**20)", "'100,000,000,000,000,000,000'"},
    {"\"{0:.3}\".format(1 / 3)", "'0.333'"},
    {"\"{:10.3s}|\".format('hello')", "'hel       |'"},
    {"f\"{3.14159:.2f} {3.14159:8.3f}| {42:5d}| {42:<5}| {255:x} {0.000123:.2e} {0.25:.1%}\"",
     "'3.14    3.142|    42| 42   | ff 1.23e-04 25.0%'"},
    {"f\"{'left':<8}|{'right':>8}|{'mid':^7}|{-7:+d}|{3:03d}\"", "'left    |   right|  mid  |-7|003'"},
    {"f\"{10**20}\"", "'100000000000000000000'"},
    {"f\"{2**70!r:>30}\"", "'        1180591620717411303424'"},
};

// printf-style % formatting (percent_format.cpp); errors as CPython's "Type: message".
const Case kPercentFormatting[] = {
    {"\"%d\" % 7", "'7'"},
    {"\"%5d|%-5d|%05d\" % (42, 42, 42)", "'   42|42   |00042'"},
    {"\"%+d % d\" % (5, 5)", "'+5  5'"},
    {"\"%i %u\" % (-3, 9)", "'-3 9'"},
    {"\"%f\" % 1.5", "'1.500000'"},
    {"\"%.3f\" % 2.0", "'2.000'"},
    {"\"%10.4f|\" % 3.14159", "'    3.1416|'"},
    {"\"%-10.2f|\" % -2.5", "'-2.50     |'"},
    {"\"%e\" % 12345.678", "'1.234568e+04'"},
    {"\"%E\" % 0.00012", "'1.200000E-04'"},
    {"\"%g %g %g\" % (0.0001, 1e-5, 123456789.0)", "'0.0001 1e-05 1.23457e+08'"},
    {"\"%G\" % 1e-10", "'1E-10'"},
    {"\"%x %X %o\" % (255, 255, 8)", "'ff FF 10'"},
    {"\"%#x %#o\" % (255, 8)", "'0xff 0o10'"},
    {"\"%c%c\" % (65, \"z\")", "'Az'"},
    {"\"%s %r\" % (\"a\", \"a\")", "\"a 'a'\""},
    {"\"%s\" % [1, 2]", "'[1, 2]'"},
    {"\"%s\" % (1,)", "'1'"},
    {"\"%(a)s-%(b)03d\" % {\"a\": 1, \"b\": 5}", "'1-005'"},
    {"\"%%d\" % ()", "'%d'"},
    {"\"%*d|%-*d\" % (4, 7, 4, 7)", "'   7|7   '"},
    {"\"%.*f\" % (2, 3.14159)", "'3.14'"},
    {"\"%d\" % 3.9", "'3'"},
    {"\"%f\" % 3", "'3.000000'"},
    {"\"%s %s\" % (True, None)", "'True None'"},
    {"\"%5s|%-5s|%.2s\" % (\"ab\", \"ab\", \"abc\")", "'   ab|ab   |ab'"},
    {"\"%d%%\" % 50", "'50%'"},
    {"\"%.0f %.0f\" % (0.5, 1.5)", "'0 2'"},
    {"\"%x\" % -255", "'-ff'"},
    {"\"%s\" % {\"k\": 1}", "\"{'k': 1}\""},
    {"\"%d %d\" % (1,)", "TypeError: not enough arguments for format string"},
    {"\"%d\" % (1, 2)", "TypeError: not all arguments converted during string formatting"},
    {"\"%d\" % \"x\"", "TypeError: %d format: a real number is required, not str"},
    {"\"%z\" % 1", "ValueError: unsupported format character 'z' (0x7a) at index 1"},
    {"\"%(a)s\" % (1,)", "TypeError: format requires a mapping"},
    {"\"abc\" % 5", "TypeError: not all arguments converted during string formatting"},
    {"\"%.3d|%05.3d|%.3d\" % (5, 5, -5)", "'005|00005|-005'"},
    {"\"%#.4x|%-6.3d|%+.2d|%8.3o\" % (255, 5, 3, 8)", "'0x00ff|005   |+03|     010'"},
    {"\"%#08.3x\" % 10", "'0x00000a'"},
    {"\"%c\" % \"ab\"", "TypeError: %c requires int or char"},
    {"\"%c\" % \"\"", "TypeError: %c requires int or char"},
};

const Case kErrors[] = {
    {"str(10**5000)",
     "ValueError: Exceeds the limit (4300 digits) for integer string convers"
     "ion; use sys.set_int_max_str_digits() to increase the limit"},
    {"int('1' * 5000)",
     "ValueError: Exceeds the limit (4300 digits) for integer string convers"
     "ion: value has 5000 digits; use sys.set_int_max_str_digits() to increa"
     "se the limit"},
    {"format(10**5000, 'd')",
     "ValueError: Exceeds the limit (4300 digits) for integer string convers"
     "ion; use sys.set_int_max_str_digits() to increase the limit"},
    {"format(10**400, 'e')", "OverflowError: int too large to convert to float"},
    {"float(10**400)", "OverflowError: int too large to convert to float"},
    {"10**400 / 3", "OverflowError: integer division result too large for a float"},
    {"10**400 * 1.5", "OverflowError: int too large to convert to float"},
    {"float(2**1024 - 2**970)", "OverflowError: int too large to convert to float"},
    {"[1][10**20]", "IndexError: cannot fit 'int' into an index-sized integer"},
    {"[1] * 10**20", "OverflowError: cannot fit 'int' into an index-sized integer"},
    {"'a' * (-10**20)", "OverflowError: cannot fit 'int' into an index-sized integer"},
    {"format(10**20, 'c')", "OverflowError: Python int too large to convert to C long"},
    {"format(-1, 'c')", "OverflowError: %c arg not in range(0x110000)"},
    {"int('010', 0)", "ValueError: invalid literal for int() with base 0: '010'"},
    {"int('1__0')", "ValueError: invalid literal for int() with base 10: '1__0'"},
    {"int('_1')", "ValueError: invalid literal for int() with base 10: '_1'"},
    {"int('1', 1)", "ValueError: int() base must be >= 2 and <= 36, or 0"},
    {"int('10', 37)", "ValueError: int() base must be >= 2 and <= 36, or 0"},
    {"int(1.5, 10)", "TypeError: int() can't convert non-string with explicit base"},
    {"int('', 10)", "ValueError: invalid literal for int() with base 10: ''"},
    {"int('0x', 16)", "ValueError: invalid literal for int() with base 16: '0x'"},
    {"int('9', 8)", "ValueError: invalid literal for int() with base 8: '9'"},
    {"int('3.5')", "ValueError: invalid literal for int() with base 10: '3.5'"},
    {"int(float('inf'))", "OverflowError: cannot convert float infinity to integer"},
    {"int(float('nan'))", "ValueError: cannot convert float NaN to integer"},
    {"int(None)", "TypeError: int() argument must be a string, a bytes-like object or a real number, not 'NoneType'"},
    {"float('0x10')", "ValueError: could not convert string to float: '0x10'"},
    {"float('1e')", "ValueError: could not convert string to float: '1e'"},
    {"float('1__0')", "ValueError: could not convert string to float: '1__0'"},
    {"float('abc')", "ValueError: could not convert string to float: 'abc'"},
    {"float('')", "ValueError: could not convert string to float: ''"},
    {"float(None)", "TypeError: float() argument must be a string or a real number, not 'NoneType'"},
    {"2**64 % 0", "ZeroDivisionError: integer modulo by zero"},
    {"2**64 // 0", "ZeroDivisionError: integer division or modulo by zero"},
    {"divmod(2**64, 0)", "ZeroDivisionError: integer division or modulo by zero"},
    {"2**64 / 0", "ZeroDivisionError: division by zero"},
    {"5 % 0", "ZeroDivisionError: integer modulo by zero"},
    {"5 // 0", "ZeroDivisionError: integer division or modulo by zero"},
    {"5 / 0", "ZeroDivisionError: division by zero"},
    {"2**64 // 0.0", "ZeroDivisionError: float floor division by zero"},
    {"1.0 // 0", "ZeroDivisionError: float floor division by zero"},
    {"5 % 0.0", "ZeroDivisionError: float modulo"},
    {"divmod(5.0, 0)", "ZeroDivisionError: float divmod()"},
    {"5 / 0.0", "ZeroDivisionError: float division by zero"},
    {"0**-1", "ZeroDivisionError: 0.0 cannot be raised to a negative power"},
    {"0 ** -1.0", "ZeroDivisionError: 0.0 cannot be raised to a negative power"},
    {"0.0 ** -1", "ZeroDivisionError: 0.0 cannot be raised to a negative power"},
    {"10.0**400", "OverflowError: (34, 'Numerical result out of range')"},
    {"1.5 ** 10000", "OverflowError: (34, 'Numerical result out of range')"},
    {"5 >> -1", "ValueError: negative shift count"},
    {"5 << -1", "ValueError: negative shift count"},
    {"2**64 >> -1", "ValueError: negative shift count"},
    {"pow(2, 3, 0)", "ValueError: pow() 3rd argument cannot be 0"},
    {"pow(2.0, 3, 5)", "TypeError: pow() 3rd argument not allowed unless all arguments are integers"},
    {"pow(2, -1, 4)", "ValueError: base is not invertible for the given modulus"},
    {"round(float('inf'))", "OverflowError: cannot convert float infinity to integer"},
    {"round(float('nan'))", "ValueError: cannot convert float NaN to integer"},
    {"\"{\".format()", "ValueError: Single '{' encountered in format string"},
    {"\"}\".format()", "ValueError: Single '}' encountered in format string"},
    {"\"{0!x}\".format(1)", "ValueError: Unknown conversion specifier x"},
    {"\"{} {1}\".format(1, 2)",
     "ValueError: cannot switch from automatic field numbering to manual fie"
     "ld specification"},
    {"\"{1} {}\".format(1, 2)",
     "ValueError: cannot switch from manual field specification to automatic"
     " field numbering"},
    {"\"{2}\".format(1, 2)", "IndexError: Replacement index 2 out of range for positional args tuple"},
    {"\"{x}\".format(y=1)", "KeyError: 'x'"},
    {"\"{:d}\".format(1.5)", "ValueError: Unknown format code 'd' for object of type 'float'"},
    {"\"{:s}\".format(1)", "ValueError: Unknown format code 's' for object of type 'int'"},
    {"\"{:,s}\".format('a')", "ValueError: Cannot specify ',' with 's'."},
    {"\"{:=5}\".format('a')", "ValueError: '=' alignment not allowed in string format specifier"},
    {"\"{:+}\".format('a')", "ValueError: Sign not allowed in string format specifier"},
    {"\"{:.2d}\".format(5)", "ValueError: Precision not allowed in integer format specifier"},
    {"\"{:#c}\".format(5)", "ValueError: Alternate form (#) not allowed with integer format specifier 'c'"},
    {"\"{:,_}\".format(5)", "ValueError: Cannot specify both ',' and '_'."},
    {"\"{:,x}\".format(5)", "ValueError: Cannot specify ',' with 'x'."},
    {"\"{:abc}\".format(5)", "ValueError: Invalid format specifier 'abc' for object of type 'int'"},
    {"format(None, '>5')", "TypeError: unsupported format string passed to NoneType.__format__"},
    {"format([1], 'x')", "TypeError: unsupported format string passed to list.__format__"},
    {"hex(1.5)", "TypeError: 'float' object cannot be interpreted as an integer"},
};
// sum() changed in CPython 3.12 (compensated float summation); these were
// printed by CPython 3.12.3, the Python of the PyTorch 2.11 machine.
const Case kSums[] = {
    {"sum([0.1] * 10)", "1.0"},
    {"sum([0.1] * 10, 0.0)", "1.0"},
    {"sum([1, 0.1, 0.2, 0.3])", "1.6"},
    {"sum([0.1, 2**70, 0.1, 0.1])", "1.1805916207174113e+21"},
    {"sum([1e100, 1.0, -1e100, 1.0])", "2.0"},
    {"sum([-0.0, -0.0])", "0.0"},
    {"sum([-0.0], -0.0)", "-0.0"},
    {"sum([0.1] * 10, True)", "2.000000000000001"},
    {"sum([0.1, 0.7, 1e16, -1e16, 0.3])", "1.0999999999999999"},
    {"sum([x * 0.1 for x in range(20)])", "19.0"},
    {"sum([0.1, 0.2, 3, 0.3])", "3.5999999999999996"},
    {"sum([2**70, 0.1, 0.1, 0.1])", "1.1805916207174113e+21"},
};

// Literals past int64 are big ints, as any other: the VM makes one of each
// literal's text once per code object.
const Case kLiterals[] = {
    {"100000000000000000000", "100000000000000000000"},
    {"9223372036854775807", "9223372036854775807"},
    {"9223372036854775808", "9223372036854775808"},
    {"-9223372036854775808", "-9223372036854775808"},
    {"type(-9223372036854775808)", "<class 'int'>"},
    {"-9223372036854775809", "-9223372036854775809"},
    {"- -9223372036854775808", "9223372036854775808"},
    {"-(-9223372036854775808)", "9223372036854775808"},
    {"0xffff_ffff_ffff_ffff_f", "295147905179352825855"},
    {"0x8000000000000000", "9223372036854775808"},
    {"-0x8000000000000000", "-9223372036854775808"},
    {"0o7777777777777777777777777", "37778931862957161709567"},
    {"0b11111111111111111111111111111111111111111111111111111111111111111", "36893488147419103231"},
    {"100_000_000_000_000_000_000", "100000000000000000000"},
    {"100000000000000000000 == 10**20", "True"},
    {"18446744073709551616 - 1", "18446744073709551615"},
    {"[99999999999999999999, -99999999999999999999]", "[99999999999999999999, -99999999999999999999]"},
    {"(lambda x=123456789012345678901234567890: x + 1)()", "123456789012345678901234567891"},
    {"12345678901234567890 if 98765432109876543210 else 0", "12345678901234567890"},
    {"+36893488147419103232", "36893488147419103232"},
    {"~36893488147419103232", "-36893488147419103233"},
    {"0X1_0000_0000_0000_0000", "18446744073709551616"},
    {"1e400 == 10**400", "False"},
};

// The integer functions of math give ints of any size; floor, ceil and trunc
// of a float past int64 too, and the logarithms take ints past the double range.
const Case kMath[] = {
    {"math.factorial(2**70)", "OverflowError: factorial() argument should not exceed 9223372036854775807"},
    {"math.factorial(-1)", "ValueError: factorial() not defined for negative values"},
    {"math.factorial(25)", "15511210043330985984000000"},
    {"math.factorial(1.0)", "TypeError: 'float' object cannot be interpreted as an integer"},
    {"math.factorial(True)", "1"},
    {"math.factorial(0)", "1"},
    {"math.factorial(100) // math.factorial(98)", "9900"},
    {"math.comb(2**70, 3)", "274250759553534340358464632138771002190616713273449955064807424"},
    {"math.comb(100, 50)", "100891344545564193334812497256"},
    {"math.comb(5, 2**70)", "0"},
    {"math.comb(2**70, 2**69)", "OverflowError: min(n - k, k) must not exceed 9223372036854775807"},
    {"math.comb(-1, 2)", "ValueError: n must be a non-negative integer"},
    {"math.comb(3,-1)", "ValueError: k must be a non-negative integer"},
    {"math.comb(1.0,2)", "TypeError: 'float' object cannot be interpreted as an integer"},
    {"math.comb(True, True)", "1"},
    {"math.comb(1000, 500) % 1000007", "158978"},
    {"math.comb(2**64, 2)", "170141183460469231722463931679029329920"},
    {"math.perm(5)", "120"},
    {"math.perm(5,2)", "20"},
    {"math.perm(30)", "265252859812191058636308480000000"},
    {"math.perm(5, None)", "120"},
    {"math.perm(2**70, 2)", "1393796574908163946344801800419805182820352"},
    {"math.perm(3,5)", "0"},
    {"math.perm(-1,2)", "ValueError: n must be a non-negative integer"},
    {"math.perm(3,-2)", "ValueError: k must be a non-negative integer"},
    {"math.perm(20, 20)", "2432902008176640000"},
    {"math.gcd(2**70, 2**65*3)", "36893488147419103232"},
    {"math.gcd()", "0"},
    {"math.gcd(-4)", "4"},
    {"math.gcd(4, 6.0)", "TypeError: 'float' object cannot be interpreted as an integer"},
    {"math.gcd(True, 4)", "1"},
    {"math.gcd(3**200 * 2**10, 3**150 * 5) == 3**150", "True"},
    {"math.gcd(0, -2**80)", "1208925819614629174706176"},
    {"math.lcm()", "1"},
    {"math.lcm(4,6)", "12"},
    {"math.lcm(2**70, 3)", "3541774862152233910272"},
    {"math.lcm(0, 5)", "0"},
    {"math.lcm(-4, 6)", "12"},
    {"math.lcm(2**64, 2**65, 3)", "110680464442257309696"},
    {"math.isqrt(10**40)", "100000000000000000000"},
    {"math.isqrt(-1)", "ValueError: isqrt() argument must be nonnegative"},
    {"math.isqrt(2**64-1)", "4294967295"},
    {"math.isqrt(15)", "3"},
    {"math.isqrt(1.0)", "TypeError: 'float' object cannot be interpreted as an integer"},
    {"math.isqrt(True)", "1"},
    {"math.isqrt(0)", "0"},
    {"math.isqrt(2**63 - 1)", "3037000499"},
    {"math.isqrt(3**301) ** 2 <= 3**301 < (math.isqrt(3**301) + 1) ** 2", "True"},
    {"math.isqrt(-2**70)", "ValueError: isqrt() argument must be nonnegative"},
    {"math.floor(1e20)", "100000000000000000000"},
    {"math.ceil(-1e20)", "-100000000000000000000"},
    {"math.trunc(2.5e300)", "2500000000000000131261900638011050621761171452770397887289635288779506144972270489465928437701119660109261109582209695442356308088401076439111980461966767457120968002316439509344575584486970225148422383087426999862702797597419102200186631856950356236448146972050142107095289173680490967163648501350400"},
    {"math.floor(2**70)", "1180591620717411303424"},
    {"math.ceil(-2**70)", "-1180591620717411303424"},
    {"math.floor(True)", "1"},
    {"math.floor(float(\"inf\"))", "OverflowError: cannot convert float infinity to integer"},
    {"math.floor(float(\"nan\"))", "ValueError: cannot convert float NaN to integer"},
    {"math.floor(-0.5)", "-1"},
    {"math.ceil(1e308)", "100000000000000001097906362944045541740492309677311846336810682903157585404911491537163328978494688899061249669721172515611590283743140088328307009198146046031271664502933027185697489699588559043338384466165001178426897626212945177628091195786707458122783970171784415105291802893207873272974885715430223118336"},
    {"math.trunc(-9.3e18)", "-9300000000000000000"},
    {"math.log(2**2000)", "1386.2943611198907"},
    {"math.log2(2**2000)", "2000.0"},
    {"math.log10(10**400)", "400.0"},
    {"math.log(2**2000, 2)", "2000.0000000000002"},
    {"math.log(-2**2000)", "ValueError: math domain error"},
    {"math.log(3**1000)", "1098.6122886681096"},
    {"math.log10(7**2000)", "1690.1960800285137"},
    {"math.log2(2**1100 + 1)", "1100.0"},
    {"math.log(10**300)", "690.7755278982137"},
    {"math.log(2**70)", "48.520302639196174"},
    {"math.log(10, 2**2000)", "0.0016609640474436812"},
    {"math.sqrt(2**2000)", "OverflowError: int too large to convert to float"},
    {"math.prod([2**40, 2**40])", "1208925819614629174706176"},
    {"math.prod([])", "1"},
};

// The '!a' conversion of f-strings (and str.format): ascii() of the repr.
const Case kFStringAscii[] = {
    {"f'{\"é\"!a}'", "\"'\\\\xe9'\""},
    {"f'{\"snow ☃\"!a:>20}'", "\"       'snow \\\\u2603'\""},
    {"f'{[\"x\", \"é\"]!a}'", "\"['x', '\\\\xe9']\""},
    {"f'{1.5!a}'", "'1.5'"},
    {"f'{\"😀\"!a}'", "\"'\\\\U0001f600'\""},
    {"f'{\"a\"=!a}'", "'\"a\"=\\'a\\''"},
    {"'{!a}'.format('é')", "\"'\\\\xe9'\""},
};

// Ints past int64 handed to torch: PyTorch 2.11 (on the device machine, for
// print(repr(<expression>))) unpacks tensor data and int arguments as int64
// ("Overflow when unpacking long long") but takes a Scalar up to 2**64 - 1
// (as a uint64, outside Kiln's scalars), and a floating tensor takes any int.
const Case kTorchBigInts[] = {
    {"torch.tensor(2**70)", "ValueError: Overflow when unpacking long long"},
    {"torch.tensor(-2**63-1)", "ValueError: Overflow when unpacking long long"},
    {"torch.tensor([1, 2**70])", "ValueError: Overflow when unpacking long long"},
    {"torch.as_tensor(2**70)", "ValueError: Overflow when unpacking long long"},
    {"torch.randint(0, 2**70, (2,))", "ValueError: Overflow when unpacking long long"},
    {"torch.tensor([1.0, 2**70])", "tensor([1.0000e+00, 1.1806e+21])"},
    {"torch.tensor([2**70, 1.0])", "tensor([1.1806e+21, 1.0000e+00])"},
    {"torch.tensor(2**70, dtype=torch.float32)", "tensor(1.1806e+21)"},
    {"torch.ones(2).new_tensor(2**70)", "tensor(1.1806e+21)"},
    {"torch.full((2,), 2**64)", "OverflowError: int too big to convert"},
    {"torch.full((2,), 2**70)", "OverflowError: int too big to convert"},
    {"torch.full((2,), -2**64)", "OverflowError: can't convert negative int to unsigned"},
    {"torch.ones(2).add(2**70)", "OverflowError: int too big to convert"},
    {"torch.ones(2).add(1, alpha=2**70)", "OverflowError: int too big to convert"},
    {"torch.zeros(3).fill_(2**70)", "OverflowError: int too big to convert"},
    {"torch.ones(2).clamp(max=2**70)", "OverflowError: int too big to convert"},
    {"torch.arange(2**70)", "OverflowError: int too big to convert"},
    {"torch.ones(2).pow(2**70)", "OverflowError: int too big to convert"},
};

// Random operands with the limb patterns that stress schoolbook division
// (all-ones limbs, powers of two, a top limb just over half the base).
BigNum random_big(std::mt19937_64& rng, int max_limbs) {
  int limbs = int(rng() % uint64_t(max_limbs)) + 1;
  BigNum n;
  for (int i = 0; i < limbs; ++i) {
    uint64_t limb;
    switch (rng() % 5) {
      case 0: limb = 0xffffffffu; break;
      case 1: limb = 0; break;
      case 2: limb = 0x80000000u; break;
      case 3: limb = 1; break;
      default: limb = rng() & 0xffffffffu; break;
    }
    n = n.shifted_left(32) + BigNum(int64_t(limb));
  }
  return rng() % 2 ? -n : n;
}

}  // namespace

class TestPythonNumbers : public QObject {
  Q_OBJECT
 private slots:
  void big_arithmetic() { check_cases(kBigArithmetic); }
  void division_signs() { check_cases(kDivisionSigns); }
  void powers() { check_cases(kPowers); }
  void conversions() { check_cases(kConversions); }
  void comparisons() { check_cases(kComparisons); }
  void formatting() { check_cases(kFormatting); }
  void percent_formatting() { check_cases(kPercentFormatting); }
  void errors() { check_cases(kErrors); }
  void sums() { check_cases(kSums); }
  void literals() { check_cases(kLiterals); }
  void math_functions() { check_cases(kMath, "import math\n"); }
  void fstring_ascii() { check_cases(kFStringAscii); }
  void torch_big_ints() { check_cases(kTorchBigInts, "import torch\n"); }

  // PyTorch makes a uint64 Scalar of an int in [2**63, 2**64); Kiln's
  // scalars are int64 or float, so it refuses the value as outside the subset.
  void torch_uint64_scalars_are_outside_the_subset() {
    int exit_code = 0;
    std::string got = evaluate("torch.full((2,), 2**63)", exit_code, "import torch\n");
    QCOMPARE(exit_code, 3);
    QVERIFY2(got.find("which PyTorch takes as a uint64 scalar") != std::string::npos, got.c_str());
  }

  // Kiln's own limits, found before the work is done: a factorial or
  // binomial past kMaxBigIntBits is refused at once (CPython computes it),
  // and a decimal literal past 4300 digits is CPython's SyntaxError.
  void math_results_past_the_size_limit_are_refused_at_once() {
    int exit_code = 0;
    std::string got = evaluate("math.factorial(10**9)", exit_code, "import math\n");
    QCOMPARE(exit_code, 3);
    QVERIFY2(got.find("Kiln's limit for ints") != std::string::npos, got.c_str());
    got = evaluate("math.comb(10**7, 5 * 10**6)", exit_code, "import math\n");
    QCOMPARE(exit_code, 3);
    got = evaluate("math.perm(2**4000, 1000)", exit_code, "import math\n");
    QCOMPARE(exit_code, 3);
    got = evaluate(std::string(4301, '7'), exit_code);
    QCOMPARE(exit_code, 3);
    QVERIFY2(got.find("SyntaxError: Exceeds the limit (4300 digits) for integer string conversion: value has 4301 digits") !=
                 std::string::npos, got.c_str());
    QCOMPARE(evaluate(std::string(4300, '7') + " % 1000", exit_code), std::string("777"));
    got = evaluate("0x" + std::string(300000, 'f'), exit_code);
    QCOMPARE(exit_code, 3);
    QVERIFY2(got.find("integer literal of 300000 digits") != std::string::npos, got.c_str());
  }

  // Identities that pin down division, shifts, bitwise operators and text
  // conversion on thousands of operands beyond the tables.
  void bignum_identities() {
    std::mt19937_64 rng(20240611);
    for (int i = 0; i < 3000; ++i) {
      BigNum a = random_big(rng, 12), b = random_big(rng, 7);
      if (b.is_zero()) continue;
      BigNum q, r;
      BigNum::divmod(a, b, q, r);
      QVERIFY(q * b + r == a);
      // The remainder takes the divisor's sign and is smaller in magnitude.
      QVERIFY(r.is_zero() || r.negative() == b.negative());
      QVERIFY(BigNum::compare(r.abs(), b.abs()) < 0);
      uint64_t k = rng() % 100;
      QVERIFY(a.shifted_left(k).shifted_right(k) == a);
      BigNum shifted = a.shifted_right(k), scale = BigNum(1).shifted_left(k), q2, r2;
      BigNum::divmod(a, scale, q2, r2);
      QVERIFY(shifted == q2);  // >> is floor division by 2**k
      using Op = BigNum::BitOp;
      QVERIFY(BigNum::bitwise(Op::And, a, b) + BigNum::bitwise(Op::Or, a, b) == a + b);
      QVERIFY(BigNum::bitwise(Op::Xor, BigNum::bitwise(Op::Xor, a, b), b) == a);
      for (int base : {2, 10, 16, 36}) {
        std::string text = a.abs().to_string(base);
        QVERIFY(BigNum::from_digits(text, base) == a.abs());
      }
    }
  }

  void small_ints_stay_inline() {
    QVERIFY(int_value(BigNum(INT64_MAX)).is_int());
    QVERIFY(int_value(BigNum(INT64_MIN)).is_int());
    QVERIFY(is_big(int_value(BigNum(INT64_MAX) + BigNum(1))));
    QVERIFY(int_value(BigNum(INT64_MAX) + BigNum(1) - BigNum(1)).is_int());
    QCOMPARE(int_value(BigNum(INT64_MIN) - BigNum(1)).as<BigInt>()->value.to_string(16), std::string("-8000000000000001"));
  }

  void to_double_rounds_to_nearest_even() {
    bool overflow = false;
    BigNum two53 = BigNum(1).shifted_left(53);
    QCOMPARE((two53 + BigNum(1)).to_double(overflow), 9007199254740992.0);   // tie: to even
    QCOMPARE((two53 + BigNum(3)).to_double(overflow), 9007199254740996.0);   // tie: to even, upward
    // A tie at 2**200 scale broken by a far-away low bit must round up.
    BigNum big = BigNum(1).shifted_left(200) + BigNum(1).shifted_left(147);
    QCOMPARE(big.to_double(overflow), std::ldexp(1.0, 200));
    QCOMPARE((big + BigNum(1)).to_double(overflow), std::ldexp(1.0, 200) + std::ldexp(1.0, 148));
    QVERIFY(!overflow);
    (void)BigNum(1).shifted_left(1024).to_double(overflow);
    QVERIFY(overflow);
  }

  // Kiln refuses ints past kMaxBigIntBits as outside the subset (exit 3);
  // CPython has no limit, so this is Kiln's own behaviour.
  void size_limit_is_a_clear_unsupported_error() {
    int exit_code = 0;
    std::string got = evaluate("2 ** (2 ** 21)", exit_code);
    QCOMPARE(exit_code, 3);
    QVERIFY2(got.find("Kiln's limit for ints") != std::string::npos, got.c_str());
    got = evaluate("1 << (2 ** 21)", exit_code);
    QCOMPARE(exit_code, 3);
    got = evaluate("len(str(2 ** 20000))", exit_code);
    QCOMPARE(exit_code, 1);  // computed, then refused by CPython's 4300-digit limit
    QVERIFY2(got.starts_with("ValueError: Exceeds the limit (4300 digits)"), got.c_str());
  }
};

QTEST_GUILESS_MAIN(TestPythonNumbers)
#include "test_python_numbers.moc"
