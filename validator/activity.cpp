#include "activity.hpp"

#include <exception>
#include <mutex>
#include <vector>

namespace mqa::activity {
namespace {

std::mutex g_mutex;
std::vector<std::string> g_stack;

}  // namespace

scope::scope(std::string what) : exceptions_at_entry_(std::uncaught_exceptions()) {
  const std::lock_guard lock(g_mutex);
  depth_ = g_stack.size();
  g_stack.push_back(std::move(what));
}

scope::~scope() {
  if (std::uncaught_exceptions() > exceptions_at_entry_) return;  // unwinding: main reports it
  const std::lock_guard lock(g_mutex);
  if (g_stack.size() > depth_) g_stack.resize(depth_);
}

std::string current() {
  const std::lock_guard lock(g_mutex);
  std::string out;
  for (const auto& s : g_stack) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace mqa::activity
