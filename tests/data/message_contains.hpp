#pragma once
// Catch2 v2's Contains matches strings, not exceptions; this matches an exception's what().
// Use: CHECK_THROWS_MATCHES(call(), ValueError, MessageContains("byte offset 3"));
#include <exception>
#include <string>

#include <catch2/catch.hpp>

namespace tinygpt::testing {

class MessageContains : public Catch::MatcherBase<std::exception> {
 public:
  explicit MessageContains(std::string part) : part_(std::move(part)) {}
  bool match(const std::exception& e) const override {
    return std::string(e.what()).find(part_) != std::string::npos;
  }
  std::string describe() const override { return "message contains \"" + part_ + "\""; }

 private:
  std::string part_;
};

}  // namespace tinygpt::testing
