// Bundles (docs/design.md "Bundles"): the folder every kernel that is not ours reads its inputs from.
//
//   case.toml      the resolved case (every key, defaults applied; a one-case suite)
//   q.npy          uint8   [m, heads, head_dim]   fp8 codes in q_format
//   k.npy          uint8   [n, head_dim]          fp8 codes in k_format (prefill cases)
//   k_scale.npy    float32 [n]                    (prefill cases)
//   kv_cache.npy, block_table.npy, context_lens.npy  a paged case's keys (files.hpp)
//   weights.npy    float32 [m, heads]             q's per-token scale folded in
//   ks.npy, ke.npy int32   [m]                    row i sees keys ks[i] <= j < ke[i]
//   reference.npy  float32 [m, n]                 the exact reference: correctly rounded, -inf outside windows
//   digest.json    XXH3-128 of every file above as gen wrote it (digest.hpp)
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "validator/bundle/reference.hpp"
#include "validator/case/case.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/io/staging_folder.hpp"

namespace mqa::bundle {

struct bundle {
  std::string suite_name;
  cases::case_spec spec;  // topk resolved
  inputs::tensors inputs;
  std::vector<float> reference;  // [m, n]
};

// The case's inputs and exact reference, in memory. The case must have passed cases::validate.
bundle make_bundle(const cases::case_spec& c, std::string_view suite_name);

// Rows [first, first + count) of a bundle's reference into out (count * n values).
using reference_rows = std::function<void(std::int64_t first, std::int64_t count, std::span<float> out)>;

// A bundle folder about to be written, checked before any work: `dir` must be
// a new path in an existing folder or, with `replace`, an existing bundle: a folder holding
// case.toml and nothing but the bundle's files (files.hpp), or nothing at all. Anything else is an
// input_error naming what is foreign: --force never deletes a folder mqacheck did not write.
// The constructor also creates the hidden staging folder next to `dir` (io::staging_folder: removed
// on failure and on SIGINT/SIGTERM); write() fills it and renames it into place, so a reader never
// sees half a bundle. `option` ("--out") names the path in messages.
class bundle_writer {
 public:
  bundle_writer(std::string_view option, const std::filesystem::path& dir, bool replace);
  ~bundle_writer();
  bundle_writer(const bundle_writer&) = delete;
  bundle_writer& operator=(const bundle_writer&) = delete;
  // Writes further files into the folder before it is put in place (`mqacheck shrink`'s
  // logits.npy): it gets the staging folder and the name to show for it. Not in digest.json.
  using extra_files = std::function<void(const std::filesystem::path& staging, const std::filesystem::path& shown)>;
  void write(const bundle& b, const extra_files& extra = {});
  // The bundle of `spec` with inputs `t` (a paged case's cache, block table and context lengths
  // included): reference.npy is filled block by block from `rows` as it is written (memory: one
  // block of rows, never the whole reference), and digest.json records the XXH3-128 of every
  // file's bytes as they are written.
  void write(const cases::case_spec& spec, std::string_view suite_name, const inputs::tensors& t,
             const reference_rows& rows, const extra_files& extra = {});

 private:
  std::filesystem::path shown_;
  bool replace_existing_ = false;
  std::unique_ptr<io::staging_folder> staging_;
};

// bundle_writer("", dir, replace).write(b).
void write_bundle(const bundle& b, const std::filesystem::path& dir, bool replace = false);

// What a kernel under test reads (`run --kernel`, `shrink --kernel`): case.toml and the input
// arrays of the case, written into `folder` (an existing, empty folder), and nothing derived from
// the exact result: no reference.npy, and no digest.json (it would hold the reference's digest).
// `shown` names the folder in messages.
void write_kernel_inputs(const cases::case_spec& spec, std::string_view suite_name, const inputs::tensors& t,
                         const std::filesystem::path& folder, const std::filesystem::path& shown);

// `gen`: the case's inputs, then its exact reference computed a block of rows at a time straight
// into reference.npy, by `engines` where given. Returns the inputs' fingerprint (inputs::fingerprint).
std::uint64_t generate_bundle(const cases::case_spec& c, std::string_view suite_name, bundle_writer& writer,
                              const operation::engines& engines = {});

// What a reader takes digest.json (digest.hpp) for. An unkeyed digest catches accidents, never a
// forger, who can rewrite digest.json with the files: only a bundle one generated oneself can be
// judged by its digest alone.
enum class digest_use : std::uint8_t {
  // Not read: the arrays must be those case.toml generates (a bundle whose digest.json was lost or
  // damaged; `check --recompute`).
  ignore,
  // Every file must match it where there is one (an accident is named as such); the arrays must
  // still be those case.toml generates, and reference.npy is not trusted: it is computed again and
  // compared (`check`'s default).
  verify,
  // Every file must match it, and a reference.npy it proves is taken as gen's (`check
  // --trust-digest`: the bundle is one the user generated).
  trust,
};

// A bundle's case and inputs, checked as load_bundle checks them, without reading reference.npy
// (check judges it block by block). `trusted` is true only under digest_use::trust with a
// digest.json that proves every file, case.toml included: the reference is then gen's for these
// inputs. Otherwise the arrays must be those case.toml generates (a case with an origin has no
// generator: its arrays are the inputs), and `trusted` is false. Whatever the use, a case.toml
// whose digest differs must generate the same arrays, and one with an origin is refused.
struct bundle_inputs {
  std::filesystem::path dir;
  std::string suite_name;
  cases::case_spec spec;  // topk resolved
  inputs::tensors inputs;
  bool trusted = false;
};
bundle_inputs load_bundle_inputs(const std::filesystem::path& dir, digest_use use = digest_use::verify);

// Rows [first, first + count) of the bundle's reference.npy into out, checked: -inf outside every
// window (an input_error naming the file otherwise).
void read_reference_rows(const bundle_inputs& b, std::int64_t first, std::int64_t count, std::span<float> out);

// Reads a bundle back with checks: case.toml must load as exactly one case; every array must
// have the dtype and shape that case implies; windows must lie in [0, n] unless the case's
// layout sets out_of_range; a paged case's used block table entries must lie in the cache and its
// contexts in the table (the message names the request and block); k_scale (a paged cache's
// scales) must be finite (and positive unless a special says otherwise); the reference must be
// -inf outside every window; every file the case carries must match its digest (or, without
// digest.json, the arrays must be those case.toml generates; and when case.toml's digest differs,
// the arrays must still be what the edited case generates; a case with an origin, which no
// generator rebuilds, is then refused: nothing proves the edit harmless). Anything else is an
// input_error naming the file. (digest_use::trust; the reference is not trusted when case.toml was
// edited: `trusted` as load_bundle_inputs says, for callers that compute it again.)
bundle load_bundle(const std::filesystem::path& dir);

}  // namespace mqa::bundle
