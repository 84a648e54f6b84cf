// What opening a bundle costs (load_bundle_inputs: its files read, their digests checked and,
// unless the digest is trusted, its inputs regenerated to prove them), next to its two parts timed
// in this process: the files read and hashed (the bundle opened trusting its digest) and the
// regeneration alone (inputs::generate and the arrays compared). Their sum is what the opening
// cost while it hashed reference.npy before regenerating; the opening now hashes reference.npy on a
// thread of its own while the rest is checked, so it costs less than the sum where cores are free.
// MQA_BENCH_BUNDLE names a bundle to open (one `mqacheck gen` wrote for the production case, say);
// by default a bundle of a smaller causal case is written to a temporary folder.
//
// proof_compare: the proof of an unproven reference.npy compares its bytes with the reference just
// computed (2 GiB each at production); judge::same_bytes on every core against memcmp on one, on
// two equal buffers of 1 GiB.
#include <fmt/core.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/case/load.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/judge/same_bytes.hpp"

namespace {

namespace fs = std::filesystem;

constexpr const char* kBundleCase = R"(
[suite]
name = "bundle-bench"
[[case]]
name = "causal"
m = 512
n = 16384
heads = 64
head_dim = 128
seed = 42
layout = { kind = "causal" }
)";

void open_bundle() {
  fs::path dir;
  fs::path written;  // removed at the end: the default bundle only
  if (const char* named = std::getenv("MQA_BENCH_BUNDLE"); named != nullptr && *named != '\0') {
    dir = named;
  } else {
    const mqa::cases::suite s = mqa::cases::parse_suite(kBundleCase, "bundle-bench.toml");
    written = dir = fs::temp_directory_path() / fmt::format("mqa-bundle-bench-{}", std::rand());
    mqa::bundle::write_bundle(mqa::bundle::make_bundle(s.cases.front(), s.name), dir);
  }
  using mqa::bundle::digest_use;
  const double verified = mqa::bench::seconds_per_run([&] { mqa::bundle::load_bundle_inputs(dir, digest_use::verify); }, 3);
  const double trusted = mqa::bench::seconds_per_run([&] { mqa::bundle::load_bundle_inputs(dir, digest_use::trust); }, 3);
  const mqa::bundle::bundle_inputs b = mqa::bundle::load_bundle_inputs(dir, digest_use::trust);
  const double regenerated = mqa::bench::seconds_per_run(
      [&] {
        const mqa::inputs::tensors expected = mqa::inputs::generate(b.spec);
        if (expected.q != b.inputs.q || expected.k != b.inputs.k || expected.weights != b.inputs.weights)
          throw std::runtime_error("bundle bench: the bundle's inputs are not its case's");
      },
      3);
  const double fingerprinted = mqa::bench::seconds_per_run([&] { (void)mqa::inputs::fingerprint(b.inputs); }, 3);
  const auto bytes = static_cast<double>(fs::file_size(dir / "reference.npy"));
  fmt::print("bundle {} ({:.0f} MiB of reference.npy), {} cores:\n", dir.string(), bytes / (1 << 20),
             std::thread::hardware_concurrency());
  fmt::print("  opened, trusting the digest (files read and hashed)  {:8.3f} s\n", trusted);
  fmt::print("  the inputs regenerated and compared alone            {:8.3f} s\n", regenerated);
  fmt::print("  one after the other (their sum)                      {:8.3f} s\n", trusted + regenerated);
  fmt::print("  opened, verified                                     {:8.3f} s = {:.2f}x the sum\n", verified,
             verified / (trusted + regenerated));
  fmt::print("  the inputs' fingerprint (a mismatch's message only)  {:8.3f} s\n", fingerprinted);
  if (!written.empty()) fs::remove_all(written);
}

void compare_proof() {
  const std::size_t bytes = std::size_t{1} << 30;
  std::vector<unsigned char> a(bytes), b(bytes);
  for (std::size_t x = 0; x < bytes; x += 4096) a[x] = b[x] = static_cast<unsigned char>(x >> 12);  // touched
  volatile bool same = true;
  const double one = mqa::bench::seconds_per_run([&] { same = std::memcmp(a.data(), b.data(), bytes) == 0; }, 3);
  const double every = mqa::bench::seconds_per_run([&] { same = mqa::judge::same_bytes(a.data(), b.data(), bytes); }, 3);
  if (!same) throw std::runtime_error("proof bench: equal buffers compared unequal");
  fmt::print("1 GiB against 1 GiB, equal, {} cores: memcmp on one thread {:.3f} s ({:.1f} GB/s); same_bytes {:.3f} s "
             "({:.1f} GB/s) = {:.2f}x memcmp's time\n",
             std::thread::hardware_concurrency(), one, 2 * bytes / one / 1e9, every, 2 * bytes / every / 1e9, every / one);
}

const mqa::bench::registration kOpen{"bundle_open", open_bundle};
const mqa::bench::registration kProof{"proof_compare", compare_proof};

}  // namespace
