#include "base/number_text.h"

#include <charconv>
#include <cmath>
#include <type_traits>

namespace meshlearn {
namespace {

constexpr std::string_view kBlanks = " \t\r\n";

// `text` without the blanks around it and one leading '+' that a number follows.
std::string_view Unpadded(std::string_view text) {
  const size_t begin = text.find_first_not_of(kBlanks);
  if (begin == std::string_view::npos) return {};
  text = text.substr(begin, text.find_last_not_of(kBlanks) - begin + 1);
  if (text.size() > 1 && text[0] == '+' && text[1] != '-') text.remove_prefix(1);
  return text;
}

// Why `text` is no T under `form`: "" when it is one.
template <typename T>
const char* Refusal(std::string_view text, const NumberForm& form, T* out) {
  constexpr bool kFloating = std::is_floating_point_v<T>;
  const char* const not_one = kFloating ? "is not a number" : "is not a whole number";
  if (form.padded) text = Unpadded(text);
  if (text.empty() && kFloating && form.empty_is_nan) {
    *out = static_cast<T>(NAN);
    return "";
  }
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || end != text.data() + text.size()) return not_one;
  if (error == std::errc::result_out_of_range) return kFloating ? not_one : "is out of range";
  if (error != std::errc()) return not_one;
  if constexpr (kFloating) {
    if (!std::isfinite(value) && !form.non_finite) return not_one;
  }
  const double bounded = static_cast<double>(value);
  if ((form.min && bounded < *form.min) || (form.max && bounded > *form.max)) {
    return "is out of range";
  }
  *out = value;
  return "";
}

}  // namespace

std::string ExactNumber(double value) {
  if (std::isnan(value)) return "";
  char buffer[64];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, error == std::errc() ? end : buffer);
}

std::string ExactNumber(const std::optional<double>& value) {
  return value ? ExactNumber(*value) : std::string();
}

template <typename T>
std::optional<T> NumberFromText(std::string_view text, const NumberForm& form) {
  T value{};
  if (*Refusal(text, form, &value) != '\0') return std::nullopt;
  return value;
}

template <typename T>
std::string AllowedNumbers(const NumberForm& form) {
  std::string allowed;
  if constexpr (std::is_floating_point_v<T>) {
    allowed = form.non_finite ? "a decimal number such as 12 or -0.5e-3, inf, -inf or nan"
                              : "a finite decimal number such as 12 or -0.5e-3";
  } else {
    allowed = "a whole number";
  }
  if (form.min && form.max) {
    allowed += " in [" + ExactNumber(*form.min) + ", " + ExactNumber(*form.max) + "]";
  } else if (form.min) {
    allowed += " >= " + ExactNumber(*form.min);
  } else if (form.max) {
    allowed += " <= " + ExactNumber(*form.max);
  } else if (std::is_unsigned_v<T>) {
    allowed += " >= 0";
  }
  if (std::is_floating_point_v<T> && form.empty_is_nan) allowed += ", or empty for not known";
  return allowed;
}

template <typename T>
Result<T> ParseNumber(std::string_view text, std::string_view where, const NumberForm& form) {
  T value{};
  const char* refusal = Refusal(text, form, &value);
  if (*refusal == '\0') return value;
  return Status::Malformed(std::string(where) + ": '" + std::string(text) + "' " + refusal +
                           "; allowed: " + AllowedNumbers<T>(form));
}

#define MESHLEARN_NUMBER_TEXT(T)                                                    \
  template std::optional<T> NumberFromText<T>(std::string_view, const NumberForm&); \
  template std::string AllowedNumbers<T>(const NumberForm&);                        \
  template Result<T> ParseNumber<T>(std::string_view, std::string_view, const NumberForm&);
MESHLEARN_NUMBER_TEXT(int)
MESHLEARN_NUMBER_TEXT(unsigned)
MESHLEARN_NUMBER_TEXT(long)
MESHLEARN_NUMBER_TEXT(unsigned long)
MESHLEARN_NUMBER_TEXT(long long)
MESHLEARN_NUMBER_TEXT(unsigned long long)
MESHLEARN_NUMBER_TEXT(float)
MESHLEARN_NUMBER_TEXT(double)
#undef MESHLEARN_NUMBER_TEXT

}  // namespace meshlearn
