// What opening a bundle costs (load_bundle_inputs: its files read, their digests checked and,
// unless the digest is trusted, its inputs regenerated to prove them), next to its two parts timed
// in this process: the files read and hashed (the bundle opened trusting its digest) and the
// regeneration alone (inputs::generate and the arrays compared). Their sum is what the opening
// cost while it hashed reference.npy before regenerating; the opening now hashes reference.npy on a
// thread of its own while the rest is checked, so it costs less than the sum where cores are free.
// MQA_BENCH_BUNDLE names a bundle to open (one `mqacheck gen` wrote for the production case, say);
// by default a bundle of a smaller causal case is written to a temporary folder.
//
// reference_read: the same bundle's reference.npy read whole and checked, as a cold verdict's proof
// reads it (below).
//
// proof_compare: the proof of an unproven reference.npy compares its bytes with the reference just
// computed (2 GiB each at production); judge::same_bytes on every core against memcmp on one, on
// two equal buffers of 1 GiB.
#include <fmt/core.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <stdexcept>
#include <thread>
#include <vector>

#include "bench.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/case/load.hpp"
#include "validator/inputs/inputs.hpp"
#include "validator/io/npy.hpp"
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

// The bundle a benchmark reads: MQA_BENCH_BUNDLE's, else one of kBundleCase written to a temporary
// folder and removed with this.
class bench_bundle {
 public:
  bench_bundle() {
    if (const char* named = std::getenv("MQA_BENCH_BUNDLE"); named != nullptr && *named != '\0') {
      dir_ = named;
      return;
    }
    const mqa::cases::suite s = mqa::cases::parse_suite(kBundleCase, "bundle-bench.toml");
    written_ = dir_ = fs::temp_directory_path() / fmt::format("mqa-bundle-bench-{}", std::rand());
    mqa::bundle::write_bundle(mqa::bundle::make_bundle(s.cases.front(), s.name), dir_);
  }
  ~bench_bundle() {
    if (!written_.empty()) fs::remove_all(written_);
  }
  bench_bundle(const bench_bundle&) = delete;
  bench_bundle& operator=(const bench_bundle&) = delete;
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_, written_;
};

void open_bundle() {
  const bench_bundle bundle;
  const fs::path& dir = bundle.dir();
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
}

// reference_read: reference.npy read whole for its proof (a cold verdict's read, beside the GPU's
// work), into a fresh buffer as the proof reads it (not zeroed first: the read writes every
// element), next to two baselines: a vector zeroed before the read fills it, and the file's bytes
// alone (io::read_npy_rows, without the check that every key outside a window is -inf).
void read_reference() {
  const bench_bundle bundle;
  const fs::path& dir = bundle.dir();
  const mqa::bundle::bundle_inputs b = mqa::bundle::load_bundle_inputs(dir, mqa::bundle::digest_use::trust);
  const std::int64_t m = b.inputs.m;
  const auto cells = static_cast<std::size_t>(b.inputs.m * b.inputs.n);
  volatile float sink = 0;
  const double fresh = mqa::bench::seconds_per_run(
      [&] {
        auto stored = std::make_unique_for_overwrite<float[]>(cells);
        mqa::bundle::read_reference_rows(b, 0, m, {stored.get(), cells});
        sink = stored[cells / 2];
      },
      3);
  const double zeroed = mqa::bench::seconds_per_run(
      [&] {
        std::vector<float> stored(cells);
        mqa::bundle::read_reference_rows(b, 0, m, stored);
        sink = stored[cells / 2];
      },
      3);
  const double bytes_alone = mqa::bench::seconds_per_run(
      [&] {
        auto stored = std::make_unique_for_overwrite<float[]>(cells);
        mqa::io::read_npy_rows<float>(dir / "reference.npy", 0, m, std::span<float>(stored.get(), cells));
        sink = stored[cells / 2];
      },
      3);
  fmt::print("reference.npy of {} ({:.0f} MiB) read whole and checked, {} cores:\n", dir.string(),
             static_cast<double>(cells) * 4 / (1 << 20), std::thread::hardware_concurrency());
  fmt::print("  into a fresh buffer, not zeroed    {:8.3f} s\n", fresh);
  fmt::print("  into a zeroed vector               {:8.3f} s = {:.2f}x\n", zeroed, zeroed / fresh);
  fmt::print("  its bytes alone, unchecked         {:8.3f} s = {:.2f}x\n", bytes_alone, bytes_alone / fresh);
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
const mqa::bench::registration kRead{"reference_read", read_reference};

}  // namespace
