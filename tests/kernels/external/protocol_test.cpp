// The JSON-lines protocol: requests as the adapter will read them, and every kind of response
// line an adapter can get wrong, each with the words that must appear in its message.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "kernels/external/protocol.hpp"

using namespace mqa::external;

TEST_CASE("a request is one JSON line with its id and the three fields", "[external][protocol]") {
  const std::string line = encode({"3.2", "/tmp/run/001-causal", "/tmp/run/001-causal.launch-1.npy", 2, std::nullopt, std::nullopt,
                                    std::nullopt, std::nullopt});
  REQUIRE(line.back() == '\n');
  CHECK(line.find('\n') == line.size() - 1);
  const auto j = nlohmann::json::parse(line);
  CHECK(j == nlohmann::json{{"id", "3.2"}, {"bundle", "/tmp/run/001-causal"}, {"out", "/tmp/run/001-causal.launch-1.npy"}, {"launch", 2}});
  // A path JSON cannot carry (not UTF-8) is refused rather than sent mangled.
  CHECK_THROWS_AS(encode({"1.1", "/tmp/\xff", "/tmp/out.npy", 1, std::nullopt, std::nullopt, std::nullopt, std::nullopt}), protocol_error);
}

TEST_CASE("bf16 and relative-column contracts say so in the request; others keep the id and the three fields", "[external][protocol]") {
  const auto j = nlohmann::json::parse(encode({"1.1", "/b", "/o.npy", 1, "bfloat16", std::nullopt, std::nullopt, std::nullopt}));
  CHECK(j == nlohmann::json{{"id", "1.1"}, {"bundle", "/b"}, {"out", "/o.npy"}, {"launch", 1}, {"logits_dtype", "bfloat16"}});
  const auto r = nlohmann::json::parse(encode({"1.2", "/b", "/o.npy", 2, std::nullopt, 48, std::nullopt, std::nullopt}));
  CHECK(r == nlohmann::json{{"id", "1.2"}, {"bundle", "/b"}, {"out", "/o.npy"}, {"launch", 2}, {"columns", "relative"}, {"max_seqlen_k", 48}});
}

TEST_CASE("an indexer's request names where its top-k indices go and their k", "[external][protocol]") {
  const auto j = nlohmann::json::parse(encode({"1.1", "/b", "/o.npy", 1, std::nullopt, std::nullopt, "/o.topk.npy", 2048}));
  CHECK(j == nlohmann::json{{"id", "1.1"}, {"bundle", "/b"}, {"out", "/o.npy"}, {"launch", 1}, {"topk_out", "/o.topk.npy"},
                            {"topk", 2048}});
}

TEST_CASE("responses that follow the protocol", "[external][protocol]") {
  SECTION("ok alone") {
    const response r = parse_response(R"({"id": "1.1", "ok": true})", "1.1");
    CHECK(r.ok);
    CHECK_FALSE(r.seconds);
    CHECK_FALSE(r.label);
  }
  SECTION("ok with the kernel's time and label; fields a later protocol may add are ignored") {
    const response r = parse_response(R"({"id": "1.1", "ok": true, "seconds": 0.00125, "label": "triton-mqa 0.3", "device": "H200"})", "1.1");
    CHECK(r.ok);
    CHECK(r.seconds == Approx(0.00125).epsilon(0));
    CHECK(r.label == "triton-mqa 0.3");
  }
  SECTION("null stands for an optional field left out; trailing blank space is fine") {
    const response r = parse_response("{\"id\": \"1.1\", \"ok\": true, \"seconds\": null, \"label\": null}  ", "1.1");
    CHECK(r.ok);
    CHECK_FALSE(r.seconds);
    CHECK_FALSE(r.label);
  }
  SECTION("a refusal carries its reason") {
    const response r = parse_response(R"({"id": "1.1", "ok": false, "error": "e5m2 is not supported"})", "1.1");
    CHECK_FALSE(r.ok);
    CHECK(r.error == "e5m2 is not supported");
    CHECK_FALSE(r.unsupported);
  }
  SECTION("a case the kernel does not take: its reason, no error needed") {
    const response r = parse_response(R"({"id": "1.1", "ok": false, "unsupported": "128 heads: sm90 takes 32 or 64"})", "1.1");
    CHECK_FALSE(r.ok);
    CHECK(r.unsupported == "128 heads: sm90 takes 32 or 64");
  }
  SECTION("an unsupported reason is one bounded line: control bytes shown, the rest cut") {
    const std::string hostile = std::string(R"(\u001b[2J\nwhy)").append(1000, 'x');
    const response r = parse_response(std::string(R"({"id": "1.1", "ok": false, "unsupported": ")").append(hostile).append("\"}"), "1.1");
    REQUIRE(r.unsupported);
    CHECK(r.unsupported->rfind("\\x1B[2J\\x0Awhyxxx", 0) == 0);
    CHECK(r.unsupported->size() < kMaxUnsupportedBytes + 40);
    CHECK(r.unsupported->ends_with("... (1008 bytes)"));
  }
}

TEST_CASE("responses that break the protocol are refused with a reason", "[external][protocol]") {
  const auto [line, words] = GENERATE(table<std::string, std::string>({
      {"loading model...", "not JSON"},
      {"", "not JSON"},
      {R"({"id": "1.1", "ok": true}{"id": "1.1", "ok": true})", "not JSON"},
      {R"([true])", "JSON array where an object was expected"},
      {R"("ok")", "JSON string where an object was expected"},
      {R"({"id": "1.1", "status": "ok"})", "no \"ok\" field"},
      {R"({"id": "1.1", "ok": "true"})", "\"ok\" is a JSON string, expected true or false"},
      {R"({"id": "1.1", "ok": 1})", "\"ok\" is a JSON number"},
      {R"({"id": "1.1", "ok": false})", "without an \"error\" string"},
      {R"({"id": "1.1", "ok": false, "error": 42})", "without an \"error\" string"},
      {R"({"id": "1.1", "ok": false, "unsupported": 128})", "\"unsupported\" is a JSON number, expected a string"},
      {R"({"id": "1.1", "ok": false, "unsupported": true, "error": "x"})", "\"unsupported\" is a JSON boolean"},
      {R"({"id": "1.1", "ok": true, "unsupported": "no"})", "\"ok\": true with \"unsupported\""},
      {R"({"id": "1.1", "ok": true, "seconds": "0.1"})", "\"seconds\" is a JSON string, expected a number"},
      {R"({"id": "1.1", "ok": true, "seconds": -0.5})", "\"seconds\" is -0.5, expected a finite number >= 0"},
      {R"({"id": "1.1", "ok": true, "seconds": 1e999})", "beyond float64's range"},
      {R"({"id": "1.1", "ok": true, "label": 7})", "\"label\" is a JSON number, expected a string"},
      {R"({"id": "1.1", "ok": true, "label": ""})", "1 to 200 bytes without control characters"},
      {R"({"id": "1.1", "ok": true, "label": "a\tb"})", "without control characters"},
      {R"({"ok": true})", "has no \"id\" (expected \"1.1\")"},
      {R"({"id": null, "ok": true})", "has no \"id\""},
      {R"({"id": 1.1, "ok": true})", "\"id\" is a JSON number, expected the request's id, the string \"1.1\""},
      {R"({"id": "1.0", "ok": true})", "answered request \"1.0\" where the answer to request \"1.1\" was expected"},
      {R"({"id": "1.0", "ok": false, "error": "x"})", "an answer arriving late, or one request answered twice"},
      // Built by append: GCC 12's -Warray-bounds misreads `"literal" + std::string&&` at -O3.
      {std::string(R"({"id": "1.1", "ok": true, "label": ")").append(201, 'x').append("\"}"), "1 to 200 bytes"},
  }));
  CAPTURE(line);
  try {
    parse_response(line, "1.1");
    FAIL("accepted");
  } catch (const protocol_error& e) {
    const std::string message = e.what();
    CAPTURE(message);
    CHECK(message.find(words) != std::string::npos);
    CHECK(message.find("(the line: '") != std::string::npos);  // the start of the line, quoted
  }
}

TEST_CASE("quoted lines are short and show control bytes", "[external][protocol]") {
  CHECK(quote("abc") == "'abc'");
  CHECK(quote("a\x1b[0m\n") == "'a\\x1B[0m\\x0A'");
  CHECK(quote(std::string(300, 'y'), 4) == "'yyyy'... (300 bytes)");
}

TEST_CASE("quoted lines are valid UTF-8: cut between characters, bad bytes shown", "[external][protocol]") {
  const std::string euro = "\xE2\x82\xAC";
  std::string euros;
  for (int i = 0; i < 60; ++i) euros += euro;
  // 120 bytes is 40 euros exactly; 121 or 122 would end inside the 41st.
  // Built by append: GCC 12's -Wstringop-overflow misreads `"literal" + std::string&&` at -O3.
  CHECK(quote(euros, 122) == std::string("'").append(euros, 0, 120).append("'... (180 bytes)"));
  CHECK(quote(std::string("x").append(euros), 120) == std::string("'x").append(euros, 0, 117).append("'... (181 bytes)"));
  CHECK(quote("ok \xFF\xC3") == "'ok \\xFF\\xC3'");
  CHECK(quote("caf\xC3\xA9") == "'caf\xC3\xA9'");
  // The message of a line that is not JSON quotes it; the message must dump as JSON.
  try {
    (void)parse_response(std::string("{\"id\": \"1.1\", \"ok\": \"").append(euros).append("\xFF\"}"), "1.1");
    FAIL("not thrown");
  } catch (const protocol_error& e) {
    CHECK_NOTHROW(nlohmann::json(std::string(e.what())).dump());
  }
}
