#pragma once
// Text exactly as CPython 3.12 writes it: repr() of floats and strings,
// format()/f-string specs for floats, ints, bools and strings, and round().
// Kiln's interpreter prints through these, and tensor_repr builds PyTorch's
// tensor text from them, so a printout can be diffed against a real run.
//
// Errors carry CPython's message (without the exception type): a bad spec gives
// "Unknown format code 'd' for object of type 'float'" and so on; the
// exception kind, where it is not ValueError, is named in each function's note.
//
// Locale: Python's 'n' type uses the C locale unless a program calls
// locale.setlocale, so 'n' here is 'd' for ints and 'g' for floats. Nothing
// here reads the process locale (Qt sets it; printf would then write commas).
//
// Covered by tests/core/test_pyformat.cpp (values recorded from CPython 3.12).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/util/status.h"

namespace kiln {

// repr(x) == str(x) for a Python float: the shortest string that reads back
// as x, switching to an exponent below 1e-4 and from 1e16 on ('1e-05',
// '1e+16', '123456789012345.0', '-0.0', 'inf', 'nan').
std::string py_float_repr(double v);

// format(v, spec): the mini-language [[fill]align][sign][z][#][0][width]
// [,|_][.precision][type]. Types e E f F g G n % and none; '' gives repr(v).
Expected<std::string> py_format_float(double v, std::string_view spec);

// format(v, spec) for a Python int: types b c d o x X n, and e E f F g G %
// through float. 'c' out of range is CPython's OverflowError.
Expected<std::string> py_format_int(int64_t v, std::string_view spec);

// An int of any size, for formatting: its sign, the digits of its magnitude
// in base 2, 8, 10 or 16 (lower case; the callback may refuse, as CPython
// refuses more than 4300 decimal digits), float(v) (infinite past the double
// range) and, when it fits int64, the value itself (for 'c').
struct PyIntParts {
  bool negative = false;
  std::function<Expected<std::string>(int base)> magnitude_digits;
  double as_double = 0;
  std::optional<int64_t> small;
};

// format(v, spec) for an int given as PyIntParts. CPython's OverflowErrors
// come back as these messages: "int too large to convert to float" (a float
// type on a value past the double range), "Python int too large to convert to
// C long" and "%c arg not in range(0x110000)" (for 'c').
Expected<std::string> py_format_int(const PyIntParts& v, std::string_view spec);

// format(b, spec) for a Python bool: '' gives 'True'/'False', any other spec
// formats it as the int 1 or 0 (bool inherits int.__format__).
Expected<std::string> py_format_bool(bool v, std::string_view spec);

// format(s, spec) for a str (UTF-8): [[fill]align][0][width][.precision][s].
// Widths and precisions count code points, as Python does.
Expected<std::string> py_format_str(std::string_view s, std::string_view spec);

// repr(s) for a UTF-8 str: single quotes unless s holds ' and no ", then
// \\, the quote, \t \n \r and other non-printables as \xHH, \uHHHH or
// \UHHHHHHHH. Printability follows Python's str.isprintable for the Unicode
// categories Cc, Cf, Zs (but space), Zl, Zp, Co, Cs and the noncharacters;
// unassigned code points (Cn) are not known here and print as themselves.
// Bytes that are not UTF-8 are written as \xHH.
std::string py_str_repr(std::string_view s);

// round(v, ndigits): v rounded half-to-even on its exact binary value to
// ndigits decimals (ndigits may be negative), as CPython does through dtoa.
// nan and inf round to themselves; a result past the largest double is
// CPython's OverflowError "rounded value too large to represent".
Expected<double> py_round(double v, int64_t ndigits);

// round(v) without ndigits: the nearest integer, ties to even, as an
// integral double (Python returns an int, which may exceed 64 bits: 1e20 rounds
// to 100000000000000000000). nan is CPython's ValueError, inf its OverflowError.
Expected<double> py_round(double v);

}  // namespace kiln
