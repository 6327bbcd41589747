#pragma once
// Exceptions thrown by tinygpt. Every message names the operation and the shapes involved,
// so a bad call can be fixed from the message alone.
#include <stdexcept>
#include <string>
#include <string_view>

namespace tinygpt {

// Base of everything tinygpt throws on a bad call.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Incompatible shapes, impossible broadcasts, bad axes.
class ShapeError : public Error {
 public:
  using Error::Error;
};

// An index, token id or position outside its valid range.
class IndexError : public Error {
 public:
  using Error::Error;
};

// Misuse of the tape: backward twice through a freed graph, backward on a non-scalar
// without a gradient, a custom op whose backward returns a gradient of the wrong shape.
class GraphError : public Error {
 public:
  using Error::Error;
};

// A value outside what an op accepts (wrong dtype, p outside [0,1), ...).
class ValueError : public Error {
 public:
  using Error::Error;
};

// `text` as a message may quote it: whole when short, else its first `max` bytes (cut at a UTF-8
// character boundary) and "... (N bytes)", so that a hostile 100 MB value still makes a short
// one-line message.
std::string excerpt(std::string_view text, size_t max = 60);

}  // namespace tinygpt
