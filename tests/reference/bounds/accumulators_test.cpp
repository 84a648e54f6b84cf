// The dot accumulator rows are the one place an accumulator is described: every row must be whole,
// so that a missing model or bound fails here instead of passing through a default.
#include <catch2/catch.hpp>

#include <cmath>
#include <set>
#include <string>

#include "reference/bounds/accumulators.hpp"
#include "reference/bounds/error_bound.hpp"
#include "reference/names/names.hpp"

using namespace mqa::bounds;
namespace names = mqa::names;

namespace {

// One element of a DeepSeek-shaped problem with every magnitude a bound term can multiply set.
element sample_element() {
  element e;
  e.magnitude = 3;
  e.unscaled_magnitude = 6;
  e.scale_abs = 0.5;
  e.weights_abs = 2;
  e.dots_abs = 40;
  e.weighted_q_abs = 5;
  e.small_weight_dots_abs = 0;
  e.scaled_weight_max = 0.25;
  e.scaled_dot_max = 4;
  e.value_abs = 1;
  return e;
}

}  // namespace

TEST_CASE("every dot accumulator row is whole", "[bounds][accumulators]") {
  std::set<std::string_view> seen;
  for (std::size_t i = 0; i < dot_accumulators().size(); ++i) {
    const dot_accumulator_traits& row = dot_accumulators()[i];
    CAPTURE(row.name);
    // The rows follow the enum, one each: the order messages list them in.
    CHECK(row.id == static_cast<dot_accumulator>(i));
    CHECK(&traits(row.id) == &row);
    CHECK(seen.insert(row.name).second);
    // The name reads back to the row, as case files and --accumulate spell it.
    CHECK(names::parse(dot_accumulators(), row.name) == row.id);
    CHECK(to_string(row.id) == row.name);
    CHECK_FALSE(row.help.empty());

    // The bound a kernel declaring this dot alone is held to: bit-exact for `exact`, else finite and
    // nonzero at a sample element.
    const error_bound b = derive({row.id, row.heads}, 128, 64);
    if (row.id == dot_accumulator::exact) {
      CHECK(row.heads == head_accumulator::exact);
      CHECK(b.bit_exact);
      CHECK(row.cause.empty());
      continue;
    }
    CHECK(row.heads == head_accumulator::fp32);
    CHECK_FALSE(b.bit_exact);
    CHECK(std::isfinite(b.at(sample_element())));
    CHECK(b.at(sample_element()) > 0);
    // A dot is either modelled bit for bit (an instruction, nothing charged) or bounded (a rounding
    // charged): never neither.
    CHECK(is_modelled(row.id) == (row.model != nullptr));
    if (row.model) {
      CHECK(row.model->name == row.name);
      CHECK(b.dot_relative == 0);
    } else {
      CHECK(row.rounding.unit > 0);
      CHECK(b.dot_relative > 0);
      CHECK(std::isfinite(b.dot_relative));
    }
    // The diagnosis can name it.
    CHECK_FALSE(row.cause.empty());
    CHECK_FALSE(row.diagnosis.empty());
  }
}

TEST_CASE("the dot rows charge what the derivation says", "[bounds][accumulators]") {
  // README.md, "The dot product": fp32 gamma_{D-1}(2^-24), fp22-truncated gamma_D(2^-13), bf16
  // (1 + gamma_{D-1}(2^-24))(1 + 2^-8) - 1.
  CHECK(derive({dot_accumulator::fp32, head_accumulator::fp32}, 128, 64).dot_relative == gamma(127, 0x1p-24));
  CHECK(derive({dot_accumulator::fp22_truncated, head_accumulator::fp32}, 128, 64).dot_relative == gamma(128, 0x1p-13));
  const double g = gamma(127, 0x1p-24);
  const double bf16 = derive({dot_accumulator::bf16, head_accumulator::fp32}, 128, 64).dot_relative;
  CHECK(bf16 >= g + 0x1p-8 + g * 0x1p-8);  // rounded upward
  CHECK(bf16 < (g + 0x1p-8 + g * 0x1p-8) * (1 + 0x1p-40));
}

TEST_CASE("messages name the modelled accumulators, in row order", "[bounds][accumulators]") {
  std::string expected;
  for (const auto& row : dot_accumulators())
    if (row.model) expected += (expected.empty() ? "" : " or ") + std::string(row.name);
  CHECK(modelled_accumulator_names() == expected);
  CHECK(modelled_accumulator_names().find("sm90-wgmma") != std::string::npos);
}
