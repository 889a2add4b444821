// base/number_text.h and base/csv.h: numbers written once and read back exactly, the strict
// reader's forms and errors, and the CSV splitter's quoting.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "base/csv.h"
#include "base/number_text.h"

namespace meshlearn {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(ExactNumber, IsTheShortestTextThatReadsBackToTheSameDouble) {
  EXPECT_EQ(ExactNumber(0.1), "0.1");
  EXPECT_EQ(ExactNumber(82.82), "82.82");
  EXPECT_EQ(ExactNumber(3), "3");
  EXPECT_EQ(ExactNumber(-0.5e-3), "-5e-04");
  EXPECT_EQ(ExactNumber(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(ExactNumber(static_cast<double>(0.1f)), "0.10000000149011612");
  EXPECT_EQ(ExactNumber(kInf), "inf");
  EXPECT_EQ(ExactNumber(-kInf), "-inf");
  EXPECT_EQ(ExactNumber(std::optional<double>()), "");
  EXPECT_EQ(ExactNumber(std::optional<double>(2.5)), "2.5");
}

TEST(ExactNumber, NanIsEmptyForNotKnown) {
  EXPECT_EQ(ExactNumber(std::numeric_limits<double>::quiet_NaN()), "");
  EXPECT_EQ(ExactNumber(-std::numeric_limits<double>::quiet_NaN()), "");
}

// Write -> read gives the same double, and write -> read -> write the same bytes, over doubles
// of every magnitude (subnormals and the extremes included).
TEST(ExactNumber, RoundTripsEveryDouble) {
  std::mt19937_64 rng(44);
  std::vector<double> values = {0.0,
                                -0.0,
                                std::numeric_limits<double>::min(),
                                std::numeric_limits<double>::denorm_min(),
                                std::numeric_limits<double>::max(),
                                -std::numeric_limits<double>::max(),
                                kInf,
                                -kInf};
  for (int i = 0; i < 20000; ++i) {
    uint64_t bits = rng();
    double value;
    std::memcpy(&value, &bits, sizeof(value));
    if (!std::isnan(value)) values.push_back(value);
  }
  const NumberForm any{.non_finite = true};
  for (double value : values) {
    const std::string text = ExactNumber(value);
    auto back = ParseNumber<double>(text, "test", any);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().ToString();
    EXPECT_EQ(std::memcmp(&*back, &value, sizeof(value)), 0) << text;
    EXPECT_EQ(ExactNumber(*back), text);
  }
}

TEST(ParseNumber, ReadsTheWholeTextAsOneNumber) {
  EXPECT_EQ(*ParseNumber<double>("-0.5e-3", "w"), -0.5e-3);
  EXPECT_EQ(*ParseNumber<double>("12", "w"), 12);
  EXPECT_EQ(*ParseNumber<float>("0.25", "w"), 0.25f);
  EXPECT_EQ(*ParseNumber<int64_t>("-7", "w"), -7);
  EXPECT_EQ(*ParseNumber<uint64_t>("18446744073709551615", "w"), UINT64_MAX);
  EXPECT_EQ(*ParseNumber<int>("0", "w"), 0);
}

TEST(ParseNumber, RefusesWhatStrtodWouldHaveReadAsSomethingElse) {
  for (const char* text : {"", " 1", "1 ", "+1", "12x", "1,5", "0x10", "1e", ".", "-", "--1"}) {
    EXPECT_FALSE(ParseNumber<double>(text, "w").ok()) << "'" << text << "'";
  }
  for (const char* text : {"", "1.5", "1e3", "-", " 2", "+2", "3x"}) {
    EXPECT_FALSE(ParseNumber<int64_t>(text, "w").ok()) << "'" << text << "'";
  }
  EXPECT_FALSE(ParseNumber<uint64_t>("-1", "w").ok());
  EXPECT_FALSE(ParseNumber<int>("2147483648", "w").ok());
  EXPECT_FALSE(ParseNumber<uint64_t>("18446744073709551616", "w").ok());
}

TEST(ParseNumber, NonFiniteValuesOnlyWhenTheFormAllowsThem) {
  for (const char* text : {"inf", "-inf", "nan", "1e999"}) {
    EXPECT_FALSE(ParseNumber<double>(text, "w").ok()) << text;
  }
  const NumberForm any{.non_finite = true};
  EXPECT_EQ(*ParseNumber<double>("inf", "w", any), kInf);
  EXPECT_EQ(*ParseNumber<double>("-inf", "w", any), -kInf);
  EXPECT_TRUE(std::isnan(*ParseNumber<double>("nan", "w", any)));
  EXPECT_TRUE(std::isnan(*ParseNumber<double>("-nan", "w", any)));
}

TEST(ParseNumber, EmptyIsNanOnlyWhenTheFormSaysSo) {
  EXPECT_FALSE(ParseNumber<double>("", "w").ok());
  EXPECT_TRUE(std::isnan(*ParseNumber<double>("", "w", {.empty_is_nan = true})));
  EXPECT_EQ(*ParseNumber<double>("4", "w", {.empty_is_nan = true}), 4);
}

TEST(ParseNumber, PaddedFormAllowsBlanksAroundAndALeadingPlus) {
  const NumberForm padded{.padded = true};
  EXPECT_EQ(*ParseNumber<double>(" \t+2.5\r ", "w", padded), 2.5);
  EXPECT_EQ(*ParseNumber<int>(" 3 ", "w", padded), 3);
  EXPECT_FALSE(ParseNumber<double>("+-1", "w", padded).ok());
  EXPECT_FALSE(ParseNumber<double>("   ", "w", padded).ok());
  EXPECT_FALSE(ParseNumber<double>("1 2", "w", padded).ok());
  EXPECT_TRUE(std::isnan(*ParseNumber<double>("  ", "w", {.empty_is_nan = true, .padded = true})));
}

TEST(ParseNumber, BoundsAreInclusive) {
  const NumberForm fraction{.min = 0, .max = 1};
  EXPECT_EQ(*ParseNumber<double>("0", "w", fraction), 0);
  EXPECT_EQ(*ParseNumber<double>("1", "w", fraction), 1);
  EXPECT_FALSE(ParseNumber<double>("1.0000001", "w", fraction).ok());
  EXPECT_FALSE(ParseNumber<int>("-1", "w", {.min = 0}).ok());
}

TEST(ParseNumber, ErrorsNameWhatWhereAndWhatIsAllowed) {
  auto bad = ParseNumber<double>("12x", "f.csv line 3, column 2 (loss)");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kMalformed);
  EXPECT_EQ(bad.status().message(),
            "f.csv line 3, column 2 (loss): '12x' is not a number; allowed: a finite decimal "
            "number such as 12 or -0.5e-3");
  EXPECT_EQ(ParseNumber<uint64_t>("-3", "bytes").status().message(),
            "bytes: '-3' is not a whole number; allowed: a whole number >= 0");
  EXPECT_EQ(ParseNumber<int>("9", "rank", {.min = 0, .max = 4}).status().message(),
            "rank: '9' is out of range; allowed: a whole number in [0, 4]");
  EXPECT_EQ(
      ParseNumber<double>("x", "v", {.non_finite = true, .empty_is_nan = true}).status().message(),
      "v: 'x' is not a number; allowed: a decimal number such as 12 or -0.5e-3, inf, -inf "
      "or nan, or empty for not known");
  EXPECT_EQ(*NumberFromText<long>("42"), 42);
  EXPECT_FALSE(NumberFromText<long>("42 ").has_value());
}

TEST(CsvNumber, NamesTheFileLineColumnAndColumnName) {
  auto records = ParseCsv("a,b\n1,oops\n", "t.csv");
  ASSERT_TRUE(records.ok());
  EXPECT_EQ(*CsvNumber<int>("t.csv", (*records)[1], 0, "a"), 1);
  auto bad = CsvNumber<double>("t.csv", (*records)[1], 1, "b");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("t.csv line 2, column 2 (b): 'oops' is not a number", 0),
            0u)
      << bad.status().message();
}

TEST(ParseCsv, HonoursRfc4180Quoting) {
  auto records = ParseCsv("id,x\n\"a,b\",1\n\"say \"\"hi\"\"\",2\r\n\"two\nlines\",3\n\n", "q.csv");
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 4u);
  EXPECT_EQ((*records)[1].fields, (std::vector<std::string>{"a,b", "1"}));
  EXPECT_EQ((*records)[2].fields, (std::vector<std::string>{"say \"hi\"", "2"}));
  EXPECT_EQ((*records)[3].fields, (std::vector<std::string>{"two\nlines", "3"}));
  EXPECT_EQ((*records)[3].line, 4u);
  for (const std::string field : {"plain", "a,b", "q\"q", "l\nl", ""}) {
    auto back = ParseCsv(CsvField(field) + ",x\n", "r.csv");
    ASSERT_TRUE(back.ok());
    ASSERT_EQ(back->size(), 1u);
    EXPECT_EQ(back->front().fields.front(), field);
  }
  EXPECT_FALSE(ParseCsv("\"never closed\n", "u.csv").ok());
  EXPECT_FALSE(ParseCsv("\"a\"b,1\n", "u.csv").ok());
}

}  // namespace
}  // namespace meshlearn
