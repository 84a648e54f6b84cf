// What mqacheck is doing, for the messages of failures that carry no context of their own: "out
// of memory" says which command and which case ran out.
//
// Scopes nest: run -> case x variant. A scope left by an exception keeps its entry, so the
// handler in main, reached after unwinding, still sees where the failure happened; the enclosing
// scope's normal exit trims such leftovers. Thread-safe (one mutex): the verdict loop and the
// commands set it, main reads it.
#pragma once

#include <boost/core/noncopyable.hpp>

#include <cstddef>
#include <string>

namespace mqa::activity {

class scope : boost::noncopyable {
 public:
  explicit scope(std::string what);
  ~scope();

 private:
  std::size_t depth_;
  int exceptions_at_entry_;
};

// "run cases/quick.toml, case 'causal' x variant 'fp32-naive'", or "" when no scope is active.
std::string current();

}  // namespace mqa::activity
