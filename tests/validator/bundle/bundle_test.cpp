#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <fmt/core.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <cmath>
#include <cstring>
#include <xtensor/xarray.hpp>

#include "validator/bundle/bundle.hpp"
#include "validator/bundle/digest.hpp"
#include "validator/case/load.hpp"
#include "validator/input_error.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/io/npy.hpp"
#include "support/input_error_of.hpp"
#include "support/one_case.hpp"
#include "support/scratch_dir.hpp"

namespace fs = std::filesystem;
using namespace mqa;

namespace {

using test::read_text;
using test::scratch_dir;

cases::suite small_suite() {
  return test::parse_one_case({.suite = "bundle-test", .name = "small", .m = 6, .n = 10, .heads = 2, .head_dim = 16,
                               .keys = R"(seed = 4
special = ["nan"]
special_in = "k"
special_count = 1
layout = { kind = "random", empty_fraction = 0.3 })"});
}

// Every file in `a` holds the bytes of the file of its name in `b`.
void check_same_files(const fs::path& a, const fs::path& b) {
  for (const auto& e : fs::directory_iterator(a)) {
    CAPTURE(e.path().filename().string());
    CHECK(read_text(e.path()) == read_text(b / e.path().filename()));
  }
}

}  // namespace

TEST_CASE("a bundle holds the files docs/design.md lists, and reads back the same", "[bundle]") {
  scratch_dir dir("bundle-roundtrip");
  const cases::suite s = small_suite();
  const bundle::bundle b = bundle::make_bundle(s.cases[0], s.name);
  REQUIRE(b.spec.topk);
  bundle::write_bundle(b, dir.root / "out");
  CHECK(dir.entries() == std::vector<std::string>{"out"});
  CHECK(dir.entries("out") == std::vector<std::string>{"case.toml", "digest.json", "k.npy", "k_scale.npy", "ke.npy",
                                                       "ks.npy", "q.npy", "reference.npy", "weights.npy"});
  CHECK(io::describe(io::read_npy_header(dir.root / "out/q.npy")) == "uint8 [6, 2, 16]");
  CHECK(io::describe(io::read_npy_header(dir.root / "out/reference.npy")) == "float32 [6, 10]");

  const bundle::bundle back = bundle::load_bundle(dir.root / "out");
  CHECK(back.suite_name == "bundle-test");
  CHECK(back.spec.name == "small");
  CHECK(back.spec.topk == b.spec.topk);
  CHECK(back.inputs.q == b.inputs.q);
  CHECK(back.inputs.k == b.inputs.k);
  CHECK(back.inputs.k_scale == b.inputs.k_scale);
  CHECK(back.inputs.weights == b.inputs.weights);
  CHECK(back.inputs.ks == b.inputs.ks);
  CHECK(back.inputs.ke == b.inputs.ke);
  CHECK(std::memcmp(back.reference.data(), b.reference.data(), b.reference.size() * sizeof(float)) == 0);
}

TEST_CASE("the same case writes the same bytes twice", "[bundle]") {
  scratch_dir dir("bundle-twice");
  const cases::suite s = small_suite();
  bundle::write_bundle(bundle::make_bundle(s.cases[0], s.name), dir.root / "a");
  bundle::write_bundle(bundle::make_bundle(s.cases[0], s.name), dir.root / "b");
  check_same_files(dir.root / "a", dir.root / "b");
}

TEST_CASE("an existing folder is kept unless replacing is asked for", "[bundle]") {
  scratch_dir dir("bundle-exists");
  const cases::suite s = small_suite();
  const bundle::bundle b = bundle::make_bundle(s.cases[0], s.name);
  bundle::write_bundle(b, dir.root / "out");
  std::ofstream(dir.root / "out/case.toml", std::ios::app) << "# an edit that replacing removes\n";
  CHECK(test::input_error_of([&] { bundle::write_bundle(b, dir.root / "out"); }).find("already exists") !=
        std::string::npos);
  CHECK(read_text(dir.root / "out/case.toml").ends_with("removes\n"));
  bundle::write_bundle(b, dir.root / "out", true);
  CHECK_FALSE(read_text(dir.root / "out/case.toml").ends_with("removes\n"));
  CHECK(fs::exists(dir.root / "out/reference.npy"));
  CHECK(dir.entries() == std::vector<std::string>{"out"});  // the old folder is gone, no temporaries
}

TEST_CASE("replacing never removes a folder that is not a bundle", "[bundle]") {
  scratch_dir dir("bundle-foreign");
  const cases::suite s = small_suite();
  const bundle::bundle b = bundle::make_bundle(s.cases[0], s.name);
  const fs::path out = dir.root / "out";
  auto [planted, is_folder, message] = GENERATE(table<std::string, bool, std::string>({
      {"mine.txt", false, "it holds mine.txt"},
      {"logits.npy", false, "it holds logits.npy"},
      {"q.npy", true, "it holds q.npy"},  // a folder with a bundle file's name is foreign
      {"", false, "it has no case.toml"},
  }));
  CAPTURE(planted);
  bundle::write_bundle(b, out);
  if (planted.empty()) fs::remove(out / "case.toml");
  else if (is_folder) {
    fs::remove(out / planted);
    fs::create_directory(out / planted);
  } else {
    std::ofstream(out / planted) << "keep";
  }
  const std::vector<std::string> before = dir.entries("out");
  const std::string error = test::input_error_of([&] { bundle::write_bundle(b, out, true); });
  CHECK_THAT(error, Catch::StartsWith(out.string() + ": not a bundle, so --force does not replace it: ") &&
                        Catch::Contains(message) && Catch::Contains("a bundle holds only case.toml, q.npy"));
  CHECK(dir.entries("out") == before);
  CHECK(dir.entries() == std::vector<std::string>{"out"});
}

TEST_CASE("an empty folder counts as replaceable, a file never does", "[bundle]") {
  scratch_dir dir("bundle-empty");
  const cases::suite s = small_suite();
  const bundle::bundle b = bundle::make_bundle(s.cases[0], s.name);
  fs::create_directory(dir.root / "empty");
  bundle::write_bundle(b, dir.root / "empty", true);
  CHECK(fs::exists(dir.root / "empty/case.toml"));
  std::ofstream(dir.root / "file") << "keep";
  CHECK(test::input_error_of([&] { bundle::write_bundle(b, dir.root / "file", true); }).find("is a regular file") !=
        std::string::npos);
  CHECK(read_text(dir.root / "file") == "keep");
}

TEST_CASE("a failed write leaves nothing behind", "[bundle]") {
  scratch_dir dir("bundle-failure");
  const cases::suite s = small_suite();
  bundle::bundle b = bundle::make_bundle(s.cases[0], s.name);
  b.reference.pop_back();  // reference.npy is the last file written
  CHECK_THROWS_AS(bundle::write_bundle(b, dir.root / "out"), std::logic_error);
  CHECK(dir.entries().empty());
  CHECK(test::input_error_of([&] { bundle::write_bundle(b, dir.root / "no/such/parent"); }).find("does not exist") !=
        std::string::npos);
  CHECK(dir.entries().empty());
}

TEST_CASE("load_bundle checks every file against case.toml", "[bundle]") {
  scratch_dir dir("bundle-load");
  const cases::suite s = small_suite();
  const bundle::bundle b = bundle::make_bundle(s.cases[0], s.name);
  const fs::path out = dir.root / "out";
  auto fresh = [&] { bundle::write_bundle(b, out, true); };

  SECTION("a missing file") {
    fresh();
    fs::remove(out / "weights.npy");
    CHECK(test::input_error_of([&] { bundle::load_bundle(out); }) ==
          (out / "weights.npy").string() + ": no such file (accepted: a regular .npy file)");
  }
  SECTION("a wrong shape") {
    fresh();
    io::write_npy(out / "ks.npy", xt::xarray<std::int32_t>::from_shape({5}));
    CHECK(test::input_error_of([&] { bundle::load_bundle(out); }) ==
          (out / "ks.npy").string() + ": expected int32 [6] (from case.toml), found int32 [5]");
  }
  SECTION("a wrong dtype") {
    fresh();
    io::write_npy(out / "k_scale.npy", xt::xarray<double>::from_shape({10}));
    CHECK(test::input_error_of([&] { bundle::load_bundle(out); }) ==
          (out / "k_scale.npy").string() + ": expected float32 [10] (from case.toml), found float64 [10]");
  }
  SECTION("a window outside [0, n] in a case that does not ask for one") {
    fresh();
    xt::xarray<std::int32_t> ke = io::read_npy<std::int32_t>(out / "ke.npy");
    const std::int32_t end = GENERATE(11, -1);  // past n, before ks
    ke(2) = end;
    io::write_npy(out / "ke.npy", ke);
    CHECK_THAT(test::input_error_of([&] { bundle::load_bundle(out); }),
               Catch::StartsWith((out / "ke.npy").string() + ": row 2 has the window ["));
  }
  SECTION("a window starting before 0 names ks.npy") {
    fresh();
    xt::xarray<std::int32_t> ks = io::read_npy<std::int32_t>(out / "ks.npy");
    ks(3) = -2;
    io::write_npy(out / "ks.npy", ks);
    CHECK_THAT(test::input_error_of([&] { bundle::load_bundle(out); }),
               Catch::StartsWith((out / "ks.npy").string() + ": row 3 has the window [-2, "));
  }
  SECTION("a finite reference value outside its window") {
    fresh();
    xt::xarray<float> reference = io::read_npy<float>(out / "reference.npy");
    const auto row = static_cast<std::size_t>(std::find_if(b.inputs.ks.begin(), b.inputs.ks.end(), [](auto ks) { return ks > 0; }) - b.inputs.ks.begin());
    REQUIRE(row < 6);
    reference(row, 0) = 1.0f;
    io::write_npy(out / "reference.npy", reference);
    CHECK(test::input_error_of([&] { bundle::load_bundle(out); }).find(fmt::format("[{}, 0] = 1 lies outside", row)) !=
          std::string::npos);
  }
  SECTION("a finite reference value past its window, and in an empty window's row") {
    fresh();
    const xt::xarray<float> reference = io::read_npy<float>(out / "reference.npy");
    const std::int64_t n = b.inputs.n;
    std::optional<std::pair<std::size_t, std::int64_t>> past, empty;  // (row, key) outside the window
    for (std::size_t i = 0; i < 6; ++i) {
      const std::int64_t begin = b.inputs.ks[i], end = b.inputs.ke[i];
      if (end > begin && end < n && !past) past = {i, n - 1};
      if (end <= begin && !empty) empty = {i, std::clamp<std::int64_t>(begin, 0, n - 1)};
    }
    REQUIRE(past);
    REQUIRE(empty);
    for (const auto& [row, key] : {*past, *empty}) {
      xt::xarray<float> edited = reference;
      edited(row, static_cast<std::size_t>(key)) = 2.0f;
      io::write_npy(out / "reference.npy", edited);
      CAPTURE(row, key, b.inputs.ks[row], b.inputs.ke[row]);
      CHECK(test::input_error_of([&] { bundle::load_bundle(out); }).find(fmt::format("[{}, {}] = 2 lies outside", row, key)) !=
            std::string::npos);
    }
  }
  SECTION("a non-positive k_scale without the special that allows it") {
    fresh();
    xt::xarray<float> k_scale = io::read_npy<float>(out / "k_scale.npy");
    k_scale(3) = 0;
    io::write_npy(out / "k_scale.npy", k_scale);
    CHECK(test::input_error_of([&] { bundle::load_bundle(out); }).find("k_scale[3] = 0") != std::string::npos);
  }
  SECTION("a case.toml that is not one case") {
    fresh();
    std::ofstream(out / "case.toml", std::ios::app) << "\n[[case]]\nname = \"second\"\nm = 6\nn = 10\nheads = 2\nhead_dim = 16\n";
    CHECK(test::input_error_of([&] { bundle::load_bundle(out); }).find("holds 2 cases") != std::string::npos);
  }
  SECTION("a case.toml edited after gen: the arrays are not what it generates") {
    fresh();
    const std::string original = read_text(out / "case.toml");
    auto [from, to, explains] = GENERATE(table<std::string, std::string, std::string>({
        {"seed = 4", "seed = 5", "q.npy (from its seed"},
        {"kind = \"random\"\nout_of_range = false\nempty_fraction = 0.3", "kind = \"causal\"\nout_of_range = false",
         "ks.npy (from its layout"},
        // hip-nosat turns the planted NaN into another code than ml_dtypes does.
        {"profile = \"ml_dtypes\"", "profile = \"hip-nosat\"", "k.npy (from its seed, distribution, k_format, k_scale, profile"},
    }));
    CAPTURE(from, to);
    const auto at = original.find(from);
    REQUIRE(at != std::string::npos);
    std::string edited = original;
    edited.replace(at, from.size(), to);
    std::ofstream(out / "case.toml", std::ios::trunc) << edited;
    const std::string error = test::input_error_of([&] { bundle::load_bundle(out); });
    CHECK_THAT(error, Catch::StartsWith((out / "case.toml").string() + ": the arrays do not match the case") &&
                          Catch::Contains(explains) && Catch::Contains("generate the bundle again"));
  }
  SECTION("not a folder") {
    CHECK(test::input_error_of([&] { bundle::load_bundle(dir.root / "nothing"); }).find("is not a folder") !=
          std::string::npos);
  }
}

TEST_CASE("gen's block-by-block bundle is the in-memory one, byte for byte", "[bundle]") {
  scratch_dir dir("bundle-streamed");
  const cases::suite s = small_suite();
  bundle::write_bundle(bundle::make_bundle(s.cases[0], s.name), dir.root / "memory");
  bundle::bundle_writer writer("--out", dir.root / "streamed", false);
  const std::uint64_t fingerprint = bundle::generate_bundle(s.cases[0], s.name, writer);
  CHECK(fingerprint == inputs::fingerprint(inputs::generate(s.cases[0])));
  check_same_files(dir.root / "memory", dir.root / "streamed");
}

TEST_CASE("digest.json records every file's bytes, and a bundle that no longer matches is refused", "[bundle]") {
  scratch_dir dir("bundle-digest");
  const cases::suite s = small_suite();
  const bundle::bundle b = bundle::make_bundle(s.cases[0], s.name);
  const fs::path out = dir.root / "out";
  bundle::write_bundle(b, out);
  const auto digests = bundle::read_digests(out);
  REQUIRE(digests);
  CHECK(digests->size() == 8);
  for (const auto& [name, hex] : *digests) CHECK(bundle::digest_of_file(out / name) == hex);
  CHECK(bundle::load_bundle_inputs(out, bundle::digest_use::trust).trusted);
  // By default a digest proves nothing to a judge: anyone can rewrite it with the files.
  CHECK_FALSE(bundle::load_bundle_inputs(out).trusted);

  SECTION("one byte of an array's data") {
    const std::string file = GENERATE(std::string("q.npy"), std::string("weights.npy"), std::string("reference.npy"));
    CAPTURE(file);
    std::string bytes = read_text(out / file);
    // The last in-window reference value, or any last byte: the structure stays valid.
    const std::size_t at = file == "reference.npy" ? [&] {
      for (std::size_t x = b.reference.size(); x-- > 0;)
        if (std::isfinite(b.reference[x])) return bytes.size() - 4 * (b.reference.size() - x);
      return bytes.size() - 1;
    }() : bytes.size() - 1;
    bytes[at] = static_cast<char>(bytes[at] ^ 0x01);
    std::ofstream(out / file, std::ios::binary | std::ios::trunc) << bytes;
    const std::string error = test::input_error_of([&] { bundle::load_bundle_inputs(out); });
    CHECK_THAT(error, Catch::StartsWith((out / file).string() + ": differs from the file `mqacheck gen` wrote") &&
                          Catch::Contains("modified or mixed up"));
    CHECK(test::input_error_of([&] { bundle::load_bundle(out); }) == error);
    // Without the digest (--recompute), the arrays are checked against case.toml instead.
    if (file != "reference.npy")
      CHECK_THAT(test::input_error_of([&] { bundle::load_bundle_inputs(out, bundle::digest_use::ignore); }),
                 Catch::Contains("the arrays do not match the case"));
    else CHECK_FALSE(bundle::load_bundle_inputs(out, bundle::digest_use::ignore).trusted);
  }
  SECTION("a case.toml edit that leaves the arrays as they are is accepted, its reference no longer trusted") {
    std::ofstream(out / "case.toml", std::ios::app) << "# a note\n";
    CHECK_FALSE(bundle::load_bundle_inputs(out, bundle::digest_use::trust).trusted);
    CHECK_FALSE(bundle::load_bundle_inputs(out).trusted);
  }
  SECTION("a case.toml edited to have an origin is refused: no generator can prove the edit harmless") {
    std::string text = read_text(out / "case.toml");
    text.insert(text.find("[[case]]\n") + 9, "origin = \"from elsewhere\"\n");
    std::ofstream(out / "case.toml", std::ios::trunc) << text;
    for (const auto use : {bundle::digest_use::trust, bundle::digest_use::verify}) {
      CHECK_THAT(test::input_error_of([&] { bundle::load_bundle_inputs(out, use); }),
                 Catch::StartsWith((out / "case.toml").string() + ": case.toml changed after `mqacheck gen` wrote it"));
    }
    CHECK_THAT(test::input_error_of([&] { bundle::load_bundle(out); }), Catch::Contains("has an origin"));
  }
  SECTION("reference.npy's refusal comes before case.toml's and the inputs', though it is hashed beside them") {
    const std::string original = read_text(out / "reference.npy");
    std::string tampered = original;
    tampered.back() = static_cast<char>(tampered.back() ^ 0x01);
    std::ofstream(out / "reference.npy", std::ios::binary | std::ios::trunc) << tampered;
    const std::string edit = GENERATE(std::string("origin"), std::string("seed"));
    CAPTURE(edit);
    std::string text = read_text(out / "case.toml");
    if (edit == "origin") text.insert(text.find("[[case]]\n") + 9, "origin = \"from elsewhere\"\n");
    else text.replace(text.find("seed = 4"), 8, "seed = 5");  // generates other arrays
    std::ofstream(out / "case.toml", std::ios::trunc) << text;
    for (const auto use : {bundle::digest_use::trust, bundle::digest_use::verify}) {
      CHECK_THAT(test::input_error_of([&] { bundle::load_bundle_inputs(out, use); }),
                 Catch::StartsWith((out / "reference.npy").string() + ": differs from the file `mqacheck gen` wrote"));
    }
    // The edit alone is refused by the checks that come after reference.npy's.
    std::ofstream(out / "reference.npy", std::ios::binary | std::ios::trunc) << original;
    CHECK_THAT(test::input_error_of([&] { bundle::load_bundle_inputs(out); }),
               Catch::StartsWith((out / "case.toml").string() + ": ") &&
                   Catch::Contains(edit == "origin" ? "has an origin" : "the arrays do not match the case"));
  }
  SECTION("no digest.json: a bundle from before digests, still read") {
    fs::remove(out / "digest.json");
    const bundle::bundle_inputs in = bundle::load_bundle_inputs(out);
    CHECK_FALSE(in.trusted);
    CHECK(in.inputs.q == b.inputs.q);
  }
  SECTION("a digest.json that is not gen's") {
    auto [text, what] = GENERATE(table<std::string, std::string>({
        {"not json", "is not JSON"},
        {"{\"schema\": \"mqacheck.bundle-digest\", \"algorithm\": \"MD5\", \"files\": {}}", "uses the algorithm \"MD5\""},
        {"{\"schema\": 5}", "is not a bundle digest"},
        {"[1, 2]", "is not a bundle digest"},
        {"{\"schema\": \"mqacheck.bundle-digest\", \"algorithm\": 7, \"files\": {}}", "uses the algorithm 7"},
        {"{\"schema\": \"mqacheck.bundle-digest\", \"files\": {}}", "names no algorithm"},
        {"{\"schema\": \"mqacheck.bundle-digest\", \"algorithm\": \"XXH3-128\", \"files\": {}}",
         "records no digest for q.npy"},
    }));
    std::ofstream(out / "digest.json", std::ios::trunc) << text;
    CHECK_THAT(test::input_error_of([&] { bundle::load_bundle_inputs(out); }),
               Catch::StartsWith((out / "digest.json").string() + ": ") && Catch::Contains(what));
  }
  SECTION("a digest.json that is no file: a folder (its read threw), a FIFO (its read blocked)") {
    fs::remove(out / "digest.json");
    const bool folder = GENERATE(true, false);
    if (folder) fs::create_directory(out / "digest.json");
    else REQUIRE(::mkfifo((out / "digest.json").c_str(), 0600) == 0);
    CHECK(test::input_error_of([&] { bundle::load_bundle_inputs(out); }) ==
          (out / "digest.json").string() + ": is " + (folder ? "a folder" : "a FIFO (named pipe)") +
              ", not a file (accepted: the digest.json `mqacheck gen` writes: {\"schema\": \"mqacheck.bundle-digest\", "
              "\"algorithm\": \"XXH3-128\", \"files\": {name: hex}}; or no digest.json)");
  }
}

TEST_CASE("reference rows are read block by block with the window check", "[bundle]") {
  scratch_dir dir("bundle-rows");
  const cases::suite s = small_suite();
  const bundle::bundle b = bundle::make_bundle(s.cases[0], s.name);
  bundle::write_bundle(b, dir.root / "out");
  const bundle::bundle_inputs in = bundle::load_bundle_inputs(dir.root / "out");
  std::vector<float> rows(static_cast<std::size_t>(2 * b.inputs.n));
  bundle::read_reference_rows(in, 3, 2, rows);
  CHECK(std::memcmp(rows.data(), b.reference.data() + 3 * b.inputs.n, rows.size() * sizeof(float)) == 0);
}

TEST_CASE("a paged bundle holds the cache, its table and lengths, and reads back the same", "[bundle][paged]") {
  scratch_dir dir("bundle-paged");
  const cases::suite s = test::parse_one_case({.suite = "paged-test", .name = "decode", .m = 6, .n = 90, .heads = 2,
                                               .head_dim = 16, .keys = R"(seed = 12
layout = { kind = "paged", next_n = 2, block_kv = 16, context_lengths = [90, 17, 0], page_bytes = 400 })"});
  const bundle::bundle b = bundle::make_bundle(s.cases[0], s.name);
  const fs::path out = dir.root / "out";
  bundle::write_bundle(b, out);
  CHECK(dir.entries("out") == std::vector<std::string>{"block_table.npy", "case.toml", "context_lens.npy", "digest.json",
                                                       "ke.npy", "ks.npy", "kv_cache.npy", "q.npy", "reference.npy",
                                                       "weights.npy"});
  // The digest covers the cache, its table and lengths as it covers a prefill bundle's k.
  const auto digests = bundle::read_digests(out);
  REQUIRE(digests);
  CHECK(digests->size() == 9);
  for (const auto& [name, hex] : *digests) CHECK(bundle::digest_of_file(out / name) == hex);
  CHECK(bundle::load_bundle_inputs(out, bundle::digest_use::trust).trusted);
  CHECK(io::read_npy_header(out / "kv_cache.npy").shape == std::vector<std::size_t>{6 + 2 + 0 + 3, 400});
  CHECK(io::read_npy_header(out / "block_table.npy").shape == std::vector<std::size_t>{3, 6});
  CHECK(io::read_npy_header(out / "context_lens.npy").shape == std::vector<std::size_t>{3});
  const bundle::bundle back = bundle::load_bundle(out);
  CHECK(inputs::fingerprint(back.inputs) == inputs::fingerprint(b.inputs));
  CHECK(back.reference == b.reference);

  SECTION("a table entry outside the cache names the request and the block") {
    xt::xarray<std::int32_t> table = io::read_npy<std::int32_t>(out / "block_table.npy");
    table(1, 1) = 11;
    io::write_npy(out / "block_table.npy", table);
    CHECK(test::input_error_of([&] { bundle::load_bundle(out); }) ==
          (out / "block_table.npy").string() +
              ": request 1, logical block 1 is mapped to block 11, outside kv_cache.npy's 11 blocks (accepted: 0 to 10 "
              "for every block a context uses)");
  }
  SECTION("a context longer than the table covers names the request") {
    xt::xarray<std::int32_t> lens = io::read_npy<std::int32_t>(out / "context_lens.npy");
    lens(2) = 97;
    io::write_npy(out / "context_lens.npy", lens);
    CHECK(test::input_error_of([&] { bundle::load_bundle(out); }) ==
          (out / "context_lens.npy").string() +
              ": request 2 has a context of 97 keys (accepted: 0 to the case's n = 90)");
  }
  SECTION("edited cache bytes are not what gen wrote, nor what the case generates") {
    xt::xarray<std::uint8_t> cache = io::read_npy<std::uint8_t>(out / "kv_cache.npy");
    cache(3, 5) ^= 1;
    io::write_npy(out / "kv_cache.npy", cache);
    // digest.json catches it first; without the digest (--recompute) the regenerated inputs do.
    CHECK_THAT(test::input_error_of([&] { bundle::load_bundle(out); }),
               Catch::StartsWith((out / "kv_cache.npy").string() + ": differs from the file `mqacheck gen` wrote"));
    CHECK_THAT(test::input_error_of([&] { bundle::load_bundle_inputs(out, bundle::digest_use::ignore); }),
               Catch::Contains("kv_cache.npy (from its seed"));
  }
  SECTION("a paged bundle written block by block is the in-memory one, byte for byte") {
    bundle::bundle_writer writer("--out", dir.root / "streamed", false);
    bundle::generate_bundle(s.cases[0], s.name, writer);
    check_same_files(out, dir.root / "streamed");
  }
}
