#pragma once
// Numbers as text: the one rule by which meshlearn writes a number that may be read back (every
// CSV cell of a node's or a tool's files) and the one rule by which it reads a number from text
// (those files, the files a user gives, environment variables, /proc).
//
// Specification.
// - ExactNumber writes the shortest decimal text that reads back as exactly the same double
//   (std::to_chars), "inf" and "-inf" for the infinities, and nothing for NaN. Rationale: write ->
//   read -> write gives the same bytes, so files can be compared and merged without drift; an
//   empty cell is how every meshlearn table says "not known" or "not applicable".
// - ParseNumber reads the whole text as one number of the type asked for, the way std::from_chars
//   reads it: decimal, an optional '-' (not for unsigned types), for floating point an optional
//   fraction and exponent. Nothing else is accepted unless a NumberForm allows it: no blanks, no
//   leading '+', no text after the number, no value outside the type or the form's bounds, and for
//   floating point no inf or nan. Rationale: strtod and atoi read "12x" as 12 and "" as 0, so a
//   damaged file would pass as wrong numbers.
// - Its error is kMalformed and names what was found, where, and what is allowed:
//   "<where>: '<text>' is not a number; allowed: a finite decimal number such as 12 or -0.5e-3".
//   Whole numbers say "is not a whole number", and a whole number outside the bounds "is out of
//   range".

#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace meshlearn {

// The shortest decimal text that reads back as exactly `value`; "inf" and "-inf" for the
// infinities and "" for NaN.
std::string ExactNumber(double value);

// ExactNumber(*value), or "" when `value` is not set.
std::string ExactNumber(const std::optional<double>& value);

// What ParseNumber accepts beyond the strict form (all off by default).
struct NumberForm {
  // Floating point: "inf", "-inf" and "nan" read as those values (a diverged loss, a snapshot).
  bool non_finite = false;
  // Floating point: an empty text reads as NaN (an empty CSV cell: not known).
  bool empty_is_nan = false;
  // Blanks (space, tab, carriage return, line feed) around the number and a leading '+' (text
  // typed by hand, a file holding one number).
  bool padded = false;
  // Inclusive bounds of the value, compared as doubles (exact for whole numbers up to 2^53).
  std::optional<double> min = std::nullopt;
  std::optional<double> max = std::nullopt;
};

// Everything ExactNumber writes: any double, inf and -inf included, and empty for NaN; also "nan",
// which files written before ExactNumber hold. The form in which meshlearn reads back the number
// cells of its own files.
inline constexpr NumberForm kExactNumberForm{.non_finite = true, .empty_is_nan = true};

// The whole of `text` as a T under `form`, or nullopt. T: int, unsigned, long, unsigned long,
// long long, unsigned long long, float or double.
template <typename T>
std::optional<T> NumberFromText(std::string_view text, const NumberForm& form = {});

// What `form` allows for a T, as error messages say it ("a whole number >= 0").
template <typename T>
std::string AllowedNumbers(const NumberForm& form = {});

// The whole of `text` as a T under `form` (NumberFromText); otherwise kMalformed naming `where`
// (a file, line and column, a variable), the text found and AllowedNumbers<T>(form).
template <typename T>
Result<T> ParseNumber(std::string_view text, std::string_view where, const NumberForm& form = {});

}  // namespace meshlearn
