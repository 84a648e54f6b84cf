// The table offers a hypothesis only where it can apply, and reads its parameters off the output.
#include <catch2/catch.hpp>

#include <algorithm>
#include <type_traits>

#include "support.hpp"
#include "validator/diagnose/hypotheses.hpp"
#include "validator/diagnose/sample.hpp"

using namespace mqa;
using kernels::cpu::model_config;

namespace {

struct offered {
  std::vector<std::string> causes, sentences;
  bool has(const std::string& cause) const { return std::find(causes.begin(), causes.end(), cause) != causes.end(); }
  std::string sentence(const std::string& cause) const {
    return sentences[static_cast<std::size_t>(std::find(causes.begin(), causes.end(), cause) - causes.begin())];
  }
};

offered candidates(const test::bench& b, std::vector<float>& out, std::vector<float>* repeat = nullptr) {
  const compare::judgement j = b.judge(out, repeat, false);
  const compare::subject e = b.evidence(out, repeat);
  const diagnose::sample s = diagnose::take_sample(e, j, diagnose::options{}.model_work);
  const model_config base;
  const diagnose::situation here{e, s, j, base};
  offered o;
  for (const auto& h : diagnose::hypotheses())
    for (const auto& c : h.candidates(here)) {
      o.causes.push_back(c.cause);
      o.sentences.push_back(c.what);
    }
  return o;
}

// What is offered for the CPU model's output with `planted` (a bug, or none).
offered candidates(const test::bench& b, const model_config& planted) {
  std::vector<float> out = b.model(planted);
  return candidates(b, out);
}

// The CPU model with one knob turned (a planted bug).
template <class T>
model_config planting(T model_config::*knob, std::type_identity_t<T> value) {
  model_config c;
  c.*knob = value;
  return c;
}

}  // namespace

TEST_CASE("hypotheses are offered only where the problem can show them", "[diagnose]") {
  SECTION("k_scale before relu needs a negative k_scale") {
    const test::bench plain(8, 32, 4, 32), negative(8, 32, 4, 32, "special = [\"negative-k-scale\"]\nspecial_count = 4");
    CHECK_FALSE(candidates(plain, {}).has("scale-before-relu"));
    CHECK(candidates(negative, {}).has("scale-before-relu"));
  }
  SECTION("relu by fmax needs a NaN among the exact logits") {
    const test::bench plain(8, 32, 4, 32), nan(8, 32, 4, 32, "special = [\"nan\"]\nspecial_in = \"k\"");
    CHECK_FALSE(candidates(plain, {}).has("relu-fmax"));
    CHECK(candidates(nan, {}).has("relu-fmax"));
  }
  SECTION("a launch-dependent order needs the second launch") {
    const test::bench b(8, 32, 4, 32);
    std::vector<float> first = b.model({}), second = b.model({});
    CHECK_FALSE(candidates(b, first).has("race"));
    CHECK(candidates(b, first, &second).has("race"));
  }
  SECTION("format mix-ups need a sibling format") {
    const test::bench e5m2(8, 32, 4, 32, "q_format = \"e5m2\"\nk_format = \"e5m2\""),
        b11(8, 32, 4, 32, "q_format = \"e4m3b11fnuz\"\nk_format = \"e4m3b11fnuz\"");
    const model_config half = planting(&model_config::weight_factor, 0.5f);  // what a mix-up looks like from the outside
    const offered o = candidates(e5m2, half);
    CHECK(o.has("fnuz-mixup-qk"));
    CHECK_THAT(o.sentence("fnuz-mixup-k"), Catch::Contains("e5m2/e5m2fnuz"));
    CHECK_FALSE(candidates(b11, half).has("fnuz-mixup-k"));
  }
  SECTION("a format mix-up needs the values off by 2 or 4") {
    CHECK_FALSE(candidates(test::bench(8, 32, 4, 32), planting(&model_config::weight_factor, 1.25f)).has("fnuz-mixup-q"));
  }
}

TEST_CASE("parameters are read off the output", "[diagnose]") {
  SECTION("an unstored tail: its columns and every tile width that leaves them") {
    // 50 = 3 * 16 + 2
    const offered o = candidates(test::bench(8, 50, 4, 32), planting(&model_config::tail_block, 16));
    REQUIRE(o.has("tail-tile"));
    CHECK_THAT(o.sentence("tail-tile"), Catch::Contains("columns 48 to 49") && Catch::Contains("T = 4, 8, 16"));
  }
  SECTION("no unwritten column, no tail") {
    CHECK_FALSE(candidates(test::bench(8, 50, 4, 32), {}).has("tail-tile"));
  }
  SECTION("a constant factor, as a person wrote it") {
    const offered o = candidates(test::bench(8, 32, 4, 32), planting(&model_config::scale_factor, 1.001f));
    REQUIRE(o.has("weights-factor"));
    CHECK(o.sentence("weights-factor") == "the weights multiplied by 1.001");
    CHECK(o.sentence("k-scale-factor") == "k_scale multiplied by 1.001");
  }
  SECTION("where offsets wrap") {
    const offered o =
        candidates(test::bench(64, 100, 2, 32), planting(&model_config::offset_limit_bytes, std::int64_t{1} << 14));
    REQUIRE(o.has("offset-wrap"));
    CHECK_THAT(o.sentence("offset-wrap"), Catch::Contains("wrapping at 2^14"));
  }
}
