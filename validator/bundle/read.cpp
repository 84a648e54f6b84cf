// Reading a bundle back: every file checked against the case.toml it came with.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <exception>
#include <future>
#include <optional>
#include <span>

#include "bundle.hpp"
#include "digest.hpp"
#include "files.hpp"
#include "reference/paged/problem.hpp"
#include "validator/case/load.hpp"
#include "validator/case/paged.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"
#include "validator/layout/layout.hpp"

namespace mqa::bundle {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const fs::path& file, std::string_view what) {
  throw input_error(fmt::format("{}: {}", file.string(), what));
}

void check_header(const fs::path& dir, array_file f, const inputs::tensors& shape) {
  const auto& info = info_of(f);
  const fs::path file = dir / info.file;
  const io::npy_header found = io::read_npy_header(file);
  const io::npy_header expected{std::string(info.typestring), shape_of(f, shape), false};
  if (found.typestring != expected.typestring || found.shape != expected.shape)
    fail(file, fmt::format("expected {} (from {}), found {}", io::describe(expected), kCaseFile, io::describe(found)));
}

template <class T>
std::vector<T> read_array(const fs::path& dir, array_file f, const inputs::tensors& shape) {
  check_header(dir, f, shape);
  return io::read_npy_vector<T>(dir / info_of(f).file);
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

void check_windows(const fs::path& dir, const bundle_inputs& b) {
  if (b.spec.layout.out_of_range) return;
  const auto& t = b.inputs;
  for (std::int64_t i = 0; i < t.m; ++i)
    if (!(0 <= t.ks[i] && t.ks[i] <= t.ke[i] && t.ke[i] <= t.n))
      fail(dir / (t.ks[i] < 0 ? "ks.npy" : "ke.npy"),  // the file whose value breaks the order (ke for ks > ke)
           fmt::format("row {} has the window [{}, {}), outside 0 <= ks <= ke <= n = {}, and the case's layout does "
                       "not set out_of_range",
                       i, t.ks[i], t.ke[i], t.n));
}

void check_k_scale(const fs::path& dir, const bundle_inputs& b) {
  const auto& specials = b.spec.specials;
  const bool may_be_zero = std::ranges::count(specials, cases::special_value::zero_k_scale) > 0;
  const bool may_be_negative = std::ranges::count(specials, cases::special_value::negative_k_scale) > 0;
  auto check = [&](float s, auto where) {
    const bool ok = std::isfinite(s) && (s > 0 || (s == 0 && may_be_zero) || (s < 0 && may_be_negative));
    if (!ok)
      where(fmt::format("= {} (accepted: finite and positive, unless the case's special lists zero-k-scale or "
                        "negative-k-scale)",
                        s));
  };
  for (std::size_t j = 0; j < b.inputs.k_scale.size(); ++j)
    check(b.inputs.k_scale[j], [&](const std::string& what) { fail(dir / "k_scale.npy", fmt::format("k_scale[{}] {}", j, what)); });
  if (!b.inputs.paged) return;
  const paged::problem p = inputs::paged_problem_of(b.spec, b.inputs);
  for (std::int64_t block = 0; block < p.num_blocks; ++block)
    for (std::int64_t slot = 0; slot < p.block_kv; ++slot)
      check(paged::scale_at(p.kv_cache, p.scale_offset(block, slot)), [&](const std::string& what) {
        fail(dir / "kv_cache.npy", fmt::format("the scale of block {}, slot {} {}", block, slot, what));
      });
}

// The block table and the contexts against the cache: each message names the request
// and the logical block, and the file to look at.
void check_paged(const fs::path& dir, const bundle_inputs& b) {
  if (!b.inputs.paged) return;
  const paged::problem p = inputs::paged_problem_of(b.spec, b.inputs);
  const std::int64_t covered = p.max_blocks * p.block_kv;
  for (std::int64_t b_ = 0; b_ < p.batch; ++b_) {
    std::int64_t longest = 0;
    for (std::int64_t t = 0; t < (p.context_lens_2d ? p.next_n : 1); ++t) {
      const std::int64_t length = paged::context_of(p, b_ * p.next_n + t);
      const std::string who = p.context_lens_2d ? fmt::format("request {}, row {}", b_, t) : fmt::format("request {}", b_);
      if (length < 0 || length > p.max_context)
        fail(dir / "context_lens.npy", fmt::format("{} has a context of {} keys (accepted: 0 to the case's n = {})",
                                                   who, length, p.max_context));
      if (length > covered)
        fail(dir / "context_lens.npy",
             fmt::format("{} has a context of {} keys, which needs {} blocks of {}, but block_table.npy covers {} "
                         "blocks ({} keys): a context longer than the table covers",
                         who, length, cases::blocks_for(length, p.block_kv), p.block_kv, p.max_blocks, covered));
      longest = std::max(longest, length);
    }
    for (std::int64_t i = 0; i < cases::blocks_for(longest, p.block_kv); ++i) {
      const std::int32_t entry = p.block_table[static_cast<std::size_t>(b_ * p.max_blocks + i)];
      if (entry < 0 || entry >= p.num_blocks)
        fail(dir / "block_table.npy",
             fmt::format("request {}, logical block {} is mapped to block {}, outside kv_cache.npy's {} blocks "
                         "(accepted: 0 to {} for every block a context uses)",
                         b_, i, entry, p.num_blocks, p.num_blocks - 1));
    }
  }
}

// Rows [first, first + count) of a reference: -inf outside every window. Only the keys outside
// are read (a causal row's window holds most of its keys), in ascending order: the first wrong
// one is named.
void check_reference_rows(const fs::path& dir, const inputs::tensors& t, std::int64_t first, std::int64_t count,
                          std::span<const float> rows) {
  for (std::int64_t i = first; i < first + count; ++i) {
    const std::int64_t begin = std::clamp<std::int64_t>(t.ks[i], 0, t.n), end = std::clamp<std::int64_t>(t.ke[i], begin, t.n);
    const float* row = rows.data() + static_cast<std::size_t>((i - first) * t.n);
    for (const auto& [from, to] : {std::pair{std::int64_t{0}, begin}, std::pair{end, t.n}})
      for (std::int64_t j = from; j < to; ++j)
        if (const float v = row[j]; !(std::isinf(v) && v < 0))
          fail(dir / "reference.npy", fmt::format("[{}, {}] = {} lies outside the row's window [{}, {}) and must be -inf",
                                                  i, j, v, t.ks[i], t.ke[i]));
  }
}

template <class T>
bool same_bytes(const std::vector<T>& a, const std::vector<T>& b) {
  // A paged case's k and k_scale are empty: memcmp must not see their null data().
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

// What in case.toml decides each generated array (inputs.hpp's pipeline), for the message that
// says which edit could explain a mismatch.
struct generated_by {
  std::string_view file;
  std::string_view keys;
  bool (*same)(const inputs::tensors&, const inputs::tensors&);
};
constexpr std::array<generated_by, 11> kGeneratedBy{{
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
    {"kv_cache.npy", "seed, distribution, k_format, k_scale, profile, bound, special or layout",
     [](const inputs::tensors& a, const inputs::tensors& b) {
       return !a.paged || !b.paged || same_bytes(a.paged->kv_cache, b.paged->kv_cache);
     }},
    {"block_table.npy", "layout (its fill, block_table, num_blocks) or seed",
     [](const inputs::tensors& a, const inputs::tensors& b) {
       return !a.paged || !b.paged || same_bytes(a.paged->block_table, b.paged->block_table);
     }},
    {"context_lens.npy", "layout (its context keys) or seed",
     [](const inputs::tensors& a, const inputs::tensors& b) {
       return !a.paged || !b.paged || same_bytes(a.paged->context_lens, b.paged->context_lens);
     }},
    {"q_sf.npy", "seed, distribution, q_format or special",
     [](const inputs::tensors& a, const inputs::tensors& b) { return same_bytes(a.q_block_scale, b.q_block_scale); }},
    {"k_sf.npy", "seed, distribution, k_format or special",
     [](const inputs::tensors& a, const inputs::tensors& b) { return same_bytes(a.k_block_scale, b.k_block_scale); }},
}};

// The arrays must be the ones case.toml generates: an edited layout, seed or profile would
// otherwise be judged under a case that never produced these inputs. A case
// with an origin (a bundle `mqacheck shrink` cut down) has no generator: its arrays are the inputs,
// checked for shape, windows and k_scale like any other.
void check_generated(const fs::path& dir, const bundle_inputs& b) {
  if (!b.spec.origin.empty()) return;
  const inputs::tensors expected = inputs::generate(b.spec);
  // Compared array by array (memcmp runs at memory speed); the fingerprints, whose hash takes a
  // byte at a time on one core, are computed only for the message.
  std::string differing;
  for (const auto& g : kGeneratedBy)
    if (!g.same(b.inputs, expected)) differing += fmt::format("{}{} (from its {})", differing.empty() ? "" : "; ", g.file, g.keys);
  if (differing.empty()) return;
  const std::uint64_t found_print = inputs::fingerprint(b.inputs), expected_print = inputs::fingerprint(expected);
  fail(dir / kCaseFile,
       fmt::format("the arrays do not match the case: they have inputs fingerprint {:016x}, the case generates "
                   "{:016x}; differing: {}. case.toml or the arrays were edited after `mqacheck gen`, or come from "
                   "different bundles (accepted: the files of one `mqacheck gen`; generate the bundle again)",
                   found_print, expected_print, differing));
}

// case.toml and the arrays, with every check that needs no reference.
bundle_inputs read_inputs(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) fail(dir, "is not a folder (a bundle folder was expected)");
  const cases::suite s = cases::load_suite(dir / kCaseFile);
  if (s.cases.size() != 1)
    fail(dir / kCaseFile, fmt::format("holds {} cases; a bundle's case.toml holds exactly one", s.cases.size()));
  bundle_inputs b;
  b.dir = dir;
  b.suite_name = s.name;
  b.spec = s.cases.front();
  inputs::tensors& t = b.inputs;
  t.m = b.spec.m, t.n = b.spec.n, t.heads = b.spec.heads, t.head_dim = b.spec.head_dim;
  t.q_format = b.spec.q_format, t.k_format = b.spec.k_format;
  t.q = read_array<std::uint8_t>(dir, array_file::q, t);
  if (b.spec.layout.kind == cases::layout_kind::paged) {
    // The geometry is the resolved case's (its defaults are written out: resolved.hpp).
    const cases::layout_spec& l = b.spec.layout;
    inputs::paged_cache& cache = t.paged.emplace();
    cache.batch = cases::paged_batch(b.spec);
    cache.next_n = l.next_n;
    cache.block_kv = l.block_kv;
    cache.num_blocks = l.num_blocks.value_or(cases::default_num_blocks(b.spec));
    cache.page_bytes = l.page_bytes.value_or(cases::default_page_bytes(b.spec));
    cache.max_blocks = l.max_blocks.value_or(cases::default_max_blocks(b.spec));
    cache.context_lens_2d = l.context_lens_2d;
    cache.kv_cache = read_array<std::uint8_t>(dir, array_file::kv_cache, t);
    cache.block_table = read_array<std::int32_t>(dir, array_file::block_table, t);
    cache.context_lens = read_array<std::int32_t>(dir, array_file::context_lens, t);
  } else {
    t.k = read_array<std::uint8_t>(dir, array_file::k, t);
    t.k_scale = read_array<float>(dir, array_file::k_scale, t);
  }
  if (packed(t.q_format)) t.q = unpack_nibbles(t.q);
  if (packed(t.k_format) && !t.paged) t.k = unpack_nibbles(t.k);
  if (carries(array_file::q_sf, t)) t.q_block_scale = read_array<std::uint8_t>(dir, array_file::q_sf, t);
  if (carries(array_file::k_sf, t)) t.k_block_scale = read_array<std::uint8_t>(dir, array_file::k_sf, t);
  t.weights = read_array<float>(dir, array_file::weights, t);
  t.ks = read_array<std::int32_t>(dir, array_file::ks, t);
  t.ke = read_array<std::int32_t>(dir, array_file::ke, t);
  check_header(dir, array_file::reference, t);
  if (!b.spec.topk) b.spec.topk = layout::default_topk({t.ks, t.ke}, t.n);
  check_windows(dir, b);
  check_paged(dir, b);
  check_k_scale(dir, b);
  return b;
}

// case.toml against its digest (`recorded`), and the arrays against what case.toml generates where
// the digest is not to be trusted or case.toml was edited after `mqacheck gen`.
void check_case_file(bundle_inputs& b, digest_use use, const std::string& recorded) {
  const fs::path& dir = b.dir;
  const std::string case_file = digest_of_file(dir / kCaseFile);
  if (case_file == recorded) {
    if (use == digest_use::trust) b.trusted = true;
    else check_generated(dir, b);
    return;
  }
  // Every key of case.toml can change what the same bytes mean (a format relabelled reads every
  // code at another scale), so an edit is accepted only where the edited case is proven to generate
  // these very arrays; and the reference was proven for the case gen wrote, not this one, so it is
  // no longer trusted (judge_in_blocks computes it again). A case with an origin has no generator
  // to prove anything with.
  if (!b.spec.origin.empty())
    fail(dir / kCaseFile,
         fmt::format("case.toml changed after `mqacheck gen` wrote it ({} {}, {} records {}), and its case has an "
                     "origin, so no generator can prove the edit leaves the inputs' meaning unchanged (accepted: "
                     "case.toml as it was written; cut the bundle again with `mqacheck shrink`)",
                     kDigestAlgorithm, case_file, kDigestFile, recorded));
  check_generated(dir, b);
}

// Every file the case carries (a paged case's cache, block table and context lengths included)
// against digest.json (digest.hpp), and the arrays against case.toml where the digest is not to be
// trusted or there is none to go by. An edited case.toml is judged by what it generates, as before
// digests: an edit that leaves the arrays as they are (a note, clean_logits) is accepted.
void verify(bundle_inputs& b, digest_use use) {
  const fs::path& dir = b.dir;
  const std::optional<file_digests> digests = use != digest_use::ignore ? read_digests(dir) : std::nullopt;
  if (!digests) {
    check_generated(dir, b);
    return;
  }
  auto recorded = [&](std::string_view name) -> const std::string& {
    const auto it = digests->find(name);
    if (it == digests->end())
      fail(dir / kDigestFile, fmt::format("records no digest for {} (accepted: the digest.json `mqacheck gen` writes, "
                                          "which names every file of the bundle)",
                                          name));
    return it->second;
  };
  auto mismatch = [&](std::string_view name, const std::string& found) {
    fail(dir / name, fmt::format("differs from the file `mqacheck gen` wrote ({} {}, {} records {}): the bundle was "
                                 "modified or mixed up (accepted: the files of one `mqacheck gen`; generate the bundle "
                                 "again)",
                                 kDigestAlgorithm, found, kDigestFile, recorded(name)));
  };
  // reference.npy, by far the largest file (the logits themselves), is hashed on a thread of its own
  // while the rest is checked, the inputs regenerated among them; its verdict still comes where the
  // order of the checks puts it: after the arrays', before case.toml's and the inputs'.
  auto reference_digest = std::async(std::launch::async, [&dir] { return digest_of_file(dir / "reference.npy"); });
  for (const auto& f : kArrayFiles) {
    if (f.id == array_file::reference || !carries(f.id, b.inputs)) continue;
    const std::string found = digest_of_file(dir / f.file);
    if (found != recorded(f.file)) mismatch(f.file, found);
  }
  std::exception_ptr later;  // a failure of the checks that come after reference.npy's
  try {
    check_case_file(b, use, recorded(kCaseFile));
  } catch (...) {
    later = std::current_exception();
  }
  const std::string reference = reference_digest.get();
  if (reference != recorded("reference.npy")) mismatch("reference.npy", reference);
  if (later) std::rethrow_exception(later);
}

}  // namespace

bundle_inputs load_bundle_inputs(const fs::path& dir, digest_use use) {
  bundle_inputs b = read_inputs(dir);
  verify(b, use);
  return b;
}

void read_reference_rows(const bundle_inputs& b, std::int64_t first, std::int64_t count, std::span<float> out) {
  io::read_npy_rows<float>(b.dir / "reference.npy", first, count, out);
  check_reference_rows(b.dir, b.inputs, first, count, out);
}

bundle load_bundle(const fs::path& dir) {
  bundle_inputs in = read_inputs(dir);
  bundle b;
  b.reference = io::read_npy_vector<float>(dir / "reference.npy");
  check_reference_rows(dir, in.inputs, 0, in.inputs.m, b.reference);
  verify(in, digest_use::trust);
  b.suite_name = std::move(in.suite_name);
  b.spec = std::move(in.spec);
  b.inputs = std::move(in.inputs);
  return b;
}

}  // namespace mqa::bundle
