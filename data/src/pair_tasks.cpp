// The built-in sequence-to-sequence tasks (pairs.hpp) and their known alignments.
#include <algorithm>
#include <array>
#include <unordered_set>

#include <fmt/format.h>

#include "tinygpt/autograd/error.hpp"
#include "tinygpt/data/pairs.hpp"
#include "tinygpt/data/utf8.hpp"

namespace tinygpt::data {
namespace {

constexpr std::array<const char*, 12> kMonths{"January", "February", "March",     "April",
                                              "May",     "June",     "July",      "August",
                                              "September", "October", "November", "December"};

std::string random_letters(Generator& gen) {
  std::string s(static_cast<size_t>(8 + gen.randint(9)), 'a');  // 8-16 letters
  for (char& c : s) c = static_cast<char>('a' + gen.randint(26));
  return s;
}

int64_t days_in_month(int64_t year, int64_t month) {
  static constexpr std::array<int64_t, 12> days{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  return month == 2 && leap ? 29 : days[static_cast<size_t>(month - 1)];
}

// One pair of a task: source, target.
std::pair<std::string, std::string> draw_pair(std::string_view task, Generator& gen) {
  if (task == kReverseTask) {
    std::string s = random_letters(gen);
    return {s, std::string(s.rbegin(), s.rend())};
  }
  if (task == kSortTask) {
    std::string s = random_letters(gen);
    std::string sorted = s;
    std::sort(sorted.begin(), sorted.end());
    return {s, sorted};
  }
  const int64_t year = 1900 + gen.randint(200), month = 1 + gen.randint(12);
  const int64_t day = 1 + gen.randint(days_in_month(year, month));
  std::string words = fmt::format("{} {} {}", day, kMonths[static_cast<size_t>(month - 1)], year);
  std::string iso = fmt::format("{:04}-{:02}-{:02}", year, month, day);
  if (gen.randint(2) == 0) return {words, iso};
  return {iso, words};
}

// A date's fields as character spans [begin, end): year, month, day.
struct DateSpans {
  std::array<std::pair<int64_t, int64_t>, 3> field;
  bool numeric_month = false;
};

// "2026-11-23" or "23 November 2026"
DateSpans date_spans(const std::u32string& text) {
  DateSpans spans;
  const auto n = static_cast<int64_t>(text.size());
  if (n == 10 && text[4] == U'-' && text[7] == U'-') {
    spans.field = {{{0, 4}, {5, 7}, {8, 10}}};
    spans.numeric_month = true;
    return spans;
  }
  const size_t first = text.find(U' '), last = text.rfind(U' ');
  const auto a = static_cast<int64_t>(first), b = static_cast<int64_t>(last);
  spans.field = {{{b + 1, n}, {a + 1, b}, {0, a}}};
  return spans;
}

std::vector<int64_t> span(std::pair<int64_t, int64_t> s) {
  std::vector<int64_t> out;
  for (int64_t i = s.first; i < s.second; ++i) out.push_back(i);
  return out;
}

// Each target character of a field is aligned with the source's same field: digit for digit
// where both write it with as many digits (the year, a two-digit day), else with the whole
// field (a month's name and its number, a day written "5" and "05").
std::vector<std::vector<int64_t>> date_alignment(const std::u32string& source,
                                                 const std::u32string& target) {
  const DateSpans from = date_spans(source), to = date_spans(target);
  std::vector<std::vector<int64_t>> aligned(target.size());
  for (size_t f = 0; f < 3; ++f) {
    const auto [tb, te] = to.field[f];
    const auto [sb, se] = from.field[f];
    const bool digit_for_digit = te - tb == se - sb && (f != 1 || from.numeric_month == to.numeric_month);
    for (int64_t i = tb; i < te; ++i) {
      aligned[static_cast<size_t>(i)] = digit_for_digit ? std::vector<int64_t>{sb + (i - tb)} : span({sb, se});
    }
  }
  return aligned;
}

}  // namespace

bool is_pair_task(std::string_view source) {
  return source == kReverseTask || source == kSortTask || source == kDatesTask;
}

std::string generate_pair_task(std::string_view task, uint64_t seed, int64_t count) {
  if (!is_pair_task(task)) {
    throw ValueError(Operation("generate_pair_task"), fmt::format("unknown task '{}' (expected {}, {} or {})",
                                 task, kReverseTask, kSortTask, kDatesTask));
  }
  Generator gen(seed);
  std::unordered_set<std::string> sources;
  std::string text;
  while (static_cast<int64_t>(sources.size()) < count) {
    auto [source, target] = draw_pair(task, gen);
    if (!sources.insert(source).second) continue;  // held-out pairs are never trained on
    text += source + '\t' + target + '\n';
  }
  return text;
}

std::vector<std::vector<int64_t>> task_alignment(std::string_view task, const std::u32string& source,
                                                 const std::u32string& target) {
  std::vector<std::vector<int64_t>> aligned(target.size());
  const auto n = static_cast<int64_t>(source.size());
  if (task == kReverseTask) {
    for (int64_t i = 0; i < static_cast<int64_t>(target.size()) && i < n; ++i) {
      aligned[static_cast<size_t>(i)] = {n - 1 - i};
    }
  } else if (task == kSortTask) {
    for (size_t i = 0; i < target.size(); ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (source[static_cast<size_t>(j)] == target[i]) aligned[i].push_back(j);
      }
    }
  } else if (task == kDatesTask) {
    return date_alignment(source, target);
  } else {
    return {};
  }
  return aligned;
}

}  // namespace tinygpt::data
