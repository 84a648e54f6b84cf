#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/scratch_dir.hpp"
#include "validator/case/load.hpp"
#include "validator/case/resolved.hpp"
#include "validator/input_error.hpp"

using namespace mqa::cases;
namespace fp8 = mqa::fp8;

namespace {

constexpr const char* kSuite = R"(
[suite]
name = "demo"

[defaults]
heads = 8
head_dim = 64
k_format = "e5m2"
seed = 3
layout = { kind = "sliding", window = 5 }

[[case]]
name = "inherits"
m = 4
n = 16

[[case]]
name = "overrides"
m = 6
n = 6
heads = 2
k_format = "e4m3fnuz"
profile = "saturate"
bound = 224
k_scale = "ue8m0"
distribution = "near-ties"
special = ["negative-underflow", "nan"]
special_in = "k"
clean_logits = false
topk = 3
layout = { kind = "causal" }
)";

std::string parse_error_of(std::string_view text) {
  try {
    (void)parse_suite(text, "suite.toml");
  } catch (const mqa::input_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a case takes [defaults] for every key it does not set", "[case]") {
  const suite s = parse_suite(kSuite, "suite.toml");
  REQUIRE(s.name == "demo");
  REQUIRE(s.cases.size() == 2);
  const case_spec& c = s.cases[0];
  CHECK(c.name == "inherits");
  CHECK(c.heads == 8);
  CHECK(c.head_dim == 64);
  CHECK(c.k_format == fp8::format::e5m2);
  CHECK(c.q_format == fp8::format::e4m3fn);  // built-in default
  CHECK(c.seed == 3);
  CHECK(c.layout.kind == layout_kind::sliding);
  CHECK(c.layout.window == 5);
  CHECK(c.clean_logits);
  CHECK_FALSE(c.topk);
  CHECK_FALSE(c.bound);
  CHECK(c.k_bound() == 57344.0);  // no bound: the format's largest value
}

TEST_CASE("a case's own keys win, and its layout table replaces the default one whole", "[case]") {
  const suite s = parse_suite(kSuite, "suite.toml");
  const case_spec& c = s.cases[1];
  CHECK(c.heads == 2);
  CHECK(c.k_format == fp8::format::e4m3fnuz);
  CHECK(c.profile == fp8::profile_id::saturate);
  REQUIRE(c.bound);
  CHECK(*c.bound == 224.0);
  CHECK(c.k_conversion().bound == 224.0);
  CHECK(c.k_scale == scale_kind::ue8m0);
  CHECK(c.values == distribution::near_ties);
  CHECK(c.specials == std::vector{special_value::negative_underflow, special_value::nan});
  CHECK(c.special_in == special_target::k);
  CHECK_FALSE(c.clean_logits);
  CHECK(c.topk == 3);
  CHECK(c.layout.kind == layout_kind::causal);
  CHECK(c.layout.window == 0);  // not inherited from the default sliding layout
}

TEST_CASE("the resolved case reloads to the same case, and writes every key", "[case]") {
  for (const case_spec& c : parse_suite(kSuite, "suite.toml").cases) {
    CAPTURE(c.name);
    const std::string text = resolved_toml(c, "demo");
    const suite again = parse_suite(text, "case.toml");
    REQUIRE(again.cases.size() == 1);
    CHECK(again.name == "demo");
    CHECK(resolved_toml(again.cases[0], "demo") == text);
    for (const char* key : {"m =", "n =", "heads =", "head_dim =", "q_format =", "k_format =", "q_scale =", "k_scale =",
                            "profile =", "distribution =", "special =", "special_count =", "special_in =", "seed =",
                            "clean_logits =", "kind =", "out_of_range ="})
      CHECK(text.find(std::string("\n") + key) != std::string::npos);
  }
}

TEST_CASE("resolved layouts keep their parameters, derived defaults included", "[case]") {
  const suite s = parse_suite(R"(
[suite]
name = "layouts"
[defaults]
heads = 1
head_dim = 4
[[case]]
name = "cp"
m = 4
n = 40
layout = { kind = "context-parallel" }
[[case]]
name = "packed"
m = 3
n = 9
layout = { kind = "packed", query_lengths = [1, 2], context_lengths = [4, 5] }
[[case]]
name = "explicit"
m = 2
n = 9
description = "a \"quoted\" note"
layout = { kind = "explicit", out_of_range = true, ks = [-1, 3], ke = [12, 2] }
[[case]]
name = "random"
m = 2
n = 9
layout = { kind = "random", empty_fraction = 0.1 }
)",
                              "layouts.toml");
  CHECK(s.cases[0].layout.cp_rank == 3);  // DeepGEMM: (n / m) / 3 = 10 / 3
  for (const case_spec& c : s.cases) {
    CAPTURE(c.name);
    const case_spec again = parse_suite(resolved_toml(c, s.name), "case.toml").cases[0];
    CHECK(again.description == c.description);
    CHECK(again.layout.kind == c.layout.kind);
    CHECK(again.layout.cp_rank == c.layout.cp_rank);
    CHECK(again.layout.query_lengths == c.layout.query_lengths);
    CHECK(again.layout.context_lengths == c.layout.context_lengths);
    CHECK(again.layout.ks == c.layout.ks);
    CHECK(again.layout.ke == c.layout.ke);
    CHECK(again.layout.out_of_range == c.layout.out_of_range);
    CHECK(again.layout.empty_fraction == c.layout.empty_fraction);
  }
}

TEST_CASE("errors name the file, line, column, case and key", "[case]") {
  const std::string message = parse_error_of("[suite]\nname = \"s\"\n[[case]]\nname = \"c\"\nm = 0\n");
  CHECK(message == "suite.toml:5:5: case 'c': key 'm': 0 is out of range (accepted: an integer in [1, 2147483647])");
}

TEST_CASE("tables nested past what the TOML parser survives are refused at their line, strings aside", "[case]") {
  // 50,000 dotted parts overflowed toml++'s stack (a crash); the guard stops the line at its
  // 1001st dot of a key (column 2003 here: after the header's bracket, "a." pairs).
  std::string deep = "[suite]\nname = \"s\"\n[";
  for (int i = 0; i < 50000; ++i) deep += "a.";
  deep += "b]\nx = 1\n";
  CHECK(parse_error_of(deep).starts_with("suite.toml:3:2003: more than 1000 dots in keys on one line"));
  std::string parts;
  for (int i = 0; i < 1001; ++i) parts += "a.";
  // A key's dots count wherever the key is: before `=`, in an inline table, after one that held
  // a multi-line string closed by extra quotes (up to two of them the string's own).
  for (const std::string& line : {parts + "b = 1", "x = { y = 2, " + parts + "b = 1 }", "x = [{ " + parts + "b = 1 }]",
                                  "t = { s = \"\"\"x\"\"\"\", " + parts + "b = 1 }",
                                  "t = { s = '''x'''', " + parts + "b = 1 }"}) {
    CAPTURE(line.substr(0, 40));
    CHECK(parse_error_of("[suite]\nname = \"s\"\n" + line + "\n").find("more than 1000 dots in keys") !=
          std::string::npos);
  }
  // Arrays and inline tables nest under the parser's own bound: its error, not a crash.
  std::string braces = "[suite]\nname = \"s\"\nx = ";
  for (int i = 0; i < 1001; ++i) braces += "{a=";
  CHECK(parse_error_of(braces).starts_with("suite.toml:3:"));
  CHECK(parse_error_of(braces).find("TOML syntax") != std::string::npos);
  // Dots in strings (basic, literal, multi-line, escaped quotes, extra closing quotes), in comments
  // and in values (floats; a block table of 1001 requests on one line, as gen writes it) nest
  // nothing: read to the end (no [[case]]).
  const std::string dots(3000, '.');
  std::string table = "x = [";
  for (int i = 0; i < 1001; ++i) table += "[0, 1.5], ";
  table += "[2.5]]\n";
  for (const std::string& text :
       {"name = \"s\\\"" + dots + "\"\ndescription = '" + dots + "' # " + dots + "\n", "t = \"\"\"\n" + dots + "\n\"\"\"\n",
        "t = { s = \"\"\"x\"\"\"\", u = \"y\", v = \"" + dots + "\" }\n", "t = '''x'''' # " + dots + "\n", table}) {
    CAPTURE(text.substr(0, 40));
    const std::string message = parse_error_of("[suite]\n" + text);
    CHECK(message.find("more than 1000 dots") == std::string::npos);
    CHECK(message.starts_with("suite.toml:"));
  }
}

TEST_CASE("a suite file is a regular file of at most 1 MiB: a FIFO, a device or a huge file is refused unread",
          "[case]") {
  const mqa::test::scratch_dir dir("suite-kinds");
  auto error_of = [](const std::filesystem::path& file) {
    try {
      (void)load_suite(file);
    } catch (const mqa::input_error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const auto fifo = dir.root / "fifo.toml";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);  // read, it would block for ever
  CHECK(error_of(fifo) == fifo.string() + ": is a FIFO (named pipe), not a file (accepted: a regular TOML file)");
  CHECK(error_of("/dev/zero") == "/dev/zero: is a character device, not a file (accepted: a regular TOML file)");
  const auto huge = dir.root / "huge.toml";
  std::ofstream(huge) << std::string(kMaxSuiteBytes + 1, '#');
  CHECK(error_of(huge) == huge.string() + ": is 1048577 bytes; a suite file is at most 1048576 (1 MiB)");
  std::filesystem::resize_file(huge, kMaxSuiteBytes);  // a comment of 1 MiB: read, and found to hold no suite
  CHECK(error_of(huge).find("needs a [suite] table") != std::string::npos);
}

TEST_CASE("a value from [defaults] that a case cannot use is reported at the default", "[case]") {
  // window 5 is fine for sliding, but the default layout here needs n >= m.
  const std::string message = parse_error_of(
      "[suite]\nname = \"s\"\n[defaults]\nn = 2\n[[case]]\nname = \"c\"\nm = 4\nheads = 1\nhead_dim = 1\n");
  CHECK(message.starts_with("suite.toml:4:5: case 'c': key 'n': layout 'causal'"));
}

TEST_CASE("find_case names the cases there are", "[case]") {
  const suite s = parse_suite(kSuite, "suite.toml");
  CHECK(find_case(s, "overrides").m == 6);
  try {
    (void)find_case(s, "nope");
    FAIL("no error");
  } catch (const mqa::input_error& e) {
    CHECK(std::string(e.what()) == "suite.toml: no case named 'nope' (accepted: inherits, overrides)");
  }
}

TEST_CASE("every example suite in cases/ loads", "[case]") {
  for (const auto& entry : std::filesystem::recursive_directory_iterator(std::filesystem::path(MQA_SOURCE_DIR) / "cases")) {
    if (entry.path().extension() != ".toml") continue;
    CAPTURE(entry.path().string());
    CHECK_NOTHROW(load_suite(entry.path()));
  }
}

TEST_CASE("a paged case resolves its defaults and its resolved case reloads to the same case", "[case][paged]") {
  const suite s = parse_suite(R"(
[suite]
name = "p"
[[case]]
name = "decode"
m = 6
n = 100
heads = 2
head_dim = 16
layout = { kind = "paged", next_n = 3, block_kv = 32, context_lengths = [100, 33] }
[[case]]
name = "explicit"
m = 2
n = 64
heads = 2
head_dim = 16
layout = { kind = "paged", block_kv = 32, num_blocks = 5, block_table = [[4, 0], [-1, 7]], context_lengths = [64, 0] }
)",
                              "p.toml");
  const case_spec& c = s.cases[0];
  CHECK(c.layout.kind == layout_kind::paged);
  CHECK(c.layout.max_blocks == 4);                // ceil(100 / 32)
  CHECK(c.layout.page_bytes == 32 * (16 + 4));    // the payload
  CHECK(c.layout.num_blocks == 4 + 2 + 2);        // used blocks and one spare per request
  CHECK(c.layout.context_max == 100);
  for (const auto& original : s.cases) {
    CAPTURE(original.name);
    const std::string text = resolved_toml(original, "p");
    const case_spec again = parse_suite(text, "resolved.toml").cases.at(0);
    CHECK(resolved_toml(again, "p") == text);
    CHECK(again.layout.block_table == original.layout.block_table);
    CHECK(again.layout.num_blocks == original.layout.num_blocks);
    CHECK(text.find("out_of_range") == std::string::npos);
  }
}
