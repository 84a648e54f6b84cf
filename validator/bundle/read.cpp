// Reading a bundle back: every file checked against the case.toml it came with.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "bundle.hpp"
#include "files.hpp"
#include "validator/case/load.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"
#include "validator/layout/layout.hpp"

namespace mqa::bundle {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const fs::path& file, std::string_view what) {
  throw input_error(fmt::format("{}: {}", file.string(), what));
}

template <class T>
std::vector<T> read_array(const fs::path& dir, array_file f, const inputs::tensors& shape) {
  const auto& info = kArrayFiles[static_cast<std::size_t>(f)];
  const fs::path file = dir / info.file;
  const io::npy_header found = io::read_npy_header(file);
  const io::npy_header expected{std::string(info.typestring), shape_of(f, shape), false};
  if (found.typestring != expected.typestring || found.shape != expected.shape)
    fail(file, fmt::format("expected {} (from {}), found {}", io::describe(expected), kCaseFile, io::describe(found)));
  const xt::xarray<T> array = io::read_npy<T>(file);
  return std::vector<T>(array.begin(), array.end());
}

// Two 4-bit codes per byte, the low nibble first (files.hpp).
std::vector<std::uint8_t> unpack_nibbles(const std::vector<std::uint8_t>& bytes) {
  std::vector<std::uint8_t> codes(bytes.size() * 2);
  for (std::size_t c = 0; c < bytes.size(); ++c) {
    codes[2 * c] = bytes[c] & 0x0F;
    codes[2 * c + 1] = static_cast<std::uint8_t>(bytes[c] >> 4);
  }
  return codes;
}

void check_windows(const fs::path& dir, const bundle& b) {
  if (b.spec.layout.out_of_range) return;
  const auto& t = b.inputs;
  for (std::int64_t i = 0; i < t.m; ++i)
    if (!(0 <= t.ks[i] && t.ks[i] <= t.ke[i] && t.ke[i] <= t.n))
      fail(dir / "ks.npy",
           fmt::format("row {} has the window [{}, {}), outside 0 <= ks <= ke <= n = {}, and the case's layout does "
                       "not set out_of_range",
                       i, t.ks[i], t.ke[i], t.n));
}

void check_k_scale(const fs::path& dir, const bundle& b) {
  const auto& specials = b.spec.specials;
  const bool may_be_zero = std::ranges::count(specials, cases::special_value::zero_k_scale) > 0;
  const bool may_be_negative = std::ranges::count(specials, cases::special_value::negative_k_scale) > 0;
  for (std::size_t j = 0; j < b.inputs.k_scale.size(); ++j) {
    const float s = b.inputs.k_scale[j];
    const bool ok = std::isfinite(s) && (s > 0 || (s == 0 && may_be_zero) || (s < 0 && may_be_negative));
    if (!ok)
      fail(dir / "k_scale.npy", fmt::format("k_scale[{}] = {} (accepted: finite and positive, unless the case's "
                                            "special lists zero-k-scale or negative-k-scale)",
                                            j, s));
  }
}

void check_reference(const fs::path& dir, const bundle& b) {
  const auto& t = b.inputs;
  for (std::int64_t i = 0; i < t.m; ++i) {
    const std::int64_t begin = std::max<std::int64_t>(t.ks[i], 0), end = std::min<std::int64_t>(t.ke[i], t.n);
    for (std::int64_t j = 0; j < t.n; ++j) {
      const float v = b.reference[static_cast<std::size_t>(i * t.n + j)];
      if ((j < begin || j >= end) && !(std::isinf(v) && v < 0))
        fail(dir / "reference.npy",
             fmt::format("[{}, {}] = {} lies outside the row's window [{}, {}) and must be -inf", i, j, v, t.ks[i], t.ke[i]));
    }
  }
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

// What in case.toml decides each generated array (inputs.hpp's pipeline), for the message that
// says which edit could explain a mismatch.
struct generated_by {
  std::string_view file;
  std::string_view keys;
  bool (*same)(const inputs::tensors&, const inputs::tensors&);
};
constexpr std::array<generated_by, 8> kGeneratedBy{{
    {"q.npy", "seed, distribution, q_format, q_scale, profile, bound or special",
     [](const inputs::tensors& a, const inputs::tensors& b) { return same_bytes(a.q, b.q); }},
    {"k.npy", "seed, distribution, k_format, k_scale, profile, bound or special",
     [](const inputs::tensors& a, const inputs::tensors& b) { return same_bytes(a.k, b.k); }},
    {"k_scale.npy", "seed, distribution, k_format, k_scale, bound or special",
     [](const inputs::tensors& a, const inputs::tensors& b) { return same_bytes(a.k_scale, b.k_scale); }},
    {"weights.npy", "seed, distribution, q_format, q_scale or bound",
     [](const inputs::tensors& a, const inputs::tensors& b) { return same_bytes(a.weights, b.weights); }},
    {"ks.npy", "layout (kind and its keys) or seed",
     [](const inputs::tensors& a, const inputs::tensors& b) { return same_bytes(a.ks, b.ks); }},
    {"ke.npy", "layout (kind and its keys) or seed",
     [](const inputs::tensors& a, const inputs::tensors& b) { return same_bytes(a.ke, b.ke); }},
    {"q_sf.npy", "seed, distribution, q_format or special",
     [](const inputs::tensors& a, const inputs::tensors& b) { return same_bytes(a.q_block_scale, b.q_block_scale); }},
    {"k_sf.npy", "seed, distribution, k_format or special",
     [](const inputs::tensors& a, const inputs::tensors& b) { return same_bytes(a.k_block_scale, b.k_block_scale); }},
}};

// The arrays must be the ones case.toml generates: an edited layout, seed or profile would
// otherwise be judged under a case that never produced these inputs (issue 8, section 2).
void check_generated(const fs::path& dir, const bundle& b) {
  const inputs::tensors expected = inputs::generate(b.spec);
  const std::uint64_t found_print = inputs::fingerprint(b.inputs), expected_print = inputs::fingerprint(expected);
  if (found_print == expected_print) return;
  std::string differing;
  for (const auto& g : kGeneratedBy)
    if (!g.same(b.inputs, expected)) differing += fmt::format("{}{} (from its {})", differing.empty() ? "" : "; ", g.file, g.keys);
  fail(dir / kCaseFile,
       fmt::format("the arrays do not match the case: they have inputs fingerprint {:016x}, the case generates "
                   "{:016x}; differing: {}. case.toml or the arrays were edited after `mqacheck gen`, or come from "
                   "different bundles (accepted: the files of one `mqacheck gen`; generate the bundle again)",
                   found_print, expected_print, differing));
}

}  // namespace

bundle load_bundle(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail(dir, "is not a folder (a bundle folder was expected)");
  const cases::suite s = cases::load_suite(dir / kCaseFile);
  if (s.cases.size() != 1)
    fail(dir / kCaseFile, fmt::format("holds {} cases; a bundle's case.toml holds exactly one", s.cases.size()));
  bundle b;
  b.suite_name = s.name;
  b.spec = s.cases.front();
  inputs::tensors& t = b.inputs;
  t.m = b.spec.m, t.n = b.spec.n, t.heads = b.spec.heads, t.head_dim = b.spec.head_dim;
  t.q_format = b.spec.q_format, t.k_format = b.spec.k_format;
  t.q = read_array<std::uint8_t>(dir, array_file::q, t);
  t.k = read_array<std::uint8_t>(dir, array_file::k, t);
  if (packed(t.q_format)) t.q = unpack_nibbles(t.q);
  if (packed(t.k_format)) t.k = unpack_nibbles(t.k);
  if (present(array_file::q_sf, t)) t.q_block_scale = read_array<std::uint8_t>(dir, array_file::q_sf, t);
  if (present(array_file::k_sf, t)) t.k_block_scale = read_array<std::uint8_t>(dir, array_file::k_sf, t);
  t.k_scale = read_array<float>(dir, array_file::k_scale, t);
  t.weights = read_array<float>(dir, array_file::weights, t);
  t.ks = read_array<std::int32_t>(dir, array_file::ks, t);
  t.ke = read_array<std::int32_t>(dir, array_file::ke, t);
  b.reference = read_array<float>(dir, array_file::reference, t);
  if (!b.spec.topk) b.spec.topk = layout::default_topk({t.ks, t.ke}, t.n);
  check_windows(dir, b);
  check_k_scale(dir, b);
  check_reference(dir, b);
  check_generated(dir, b);
  return b;
}

}  // namespace mqa::bundle
