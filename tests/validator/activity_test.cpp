#include <catch2/catch.hpp>

#include <stdexcept>

#include "validator/activity.hpp"

namespace activity = mqa::activity;

TEST_CASE("the current activity nests, and survives the unwinding of the failure it explains", "[activity]") {
  CHECK(activity::current().empty());
  {
    const activity::scope run("run quick.toml");
    {
      const activity::scope c("case 'causal'");
      CHECK(activity::current() == "run quick.toml, case 'causal'");
    }
    CHECK(activity::current() == "run quick.toml");
    try {
      const activity::scope c("case 'big'");
      throw std::bad_alloc();
    } catch (const std::bad_alloc&) {
      CHECK(activity::current() == "run quick.toml, case 'big'");  // what main reports
    }
  }
  CHECK(activity::current().empty());  // a normal exit trims what the exception left
}
