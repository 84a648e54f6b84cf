// Establishes on the hardware that reference/mma's sm90-wgmma model is bit-exact: the share of
// dot products the model reproduces bit for bit, for e4m3 and e5m2 (and their mixes), over inputs
// built to stress every part of the fused dot-add (cancellation, mixed exponents, subnormals,
// zeros, the largest codes, realistic per-token-scaled data), as chains over D = 128 from 0 (what a
// kernel computes) and as single k-steps from assorted float32 accumulators. Two sources:
//   mqa_mma_probe --out DIR                  our inline-PTX wgmma kernel (mma_probe_kernel.cu)
//   mqa_mma_probe --verify-triton DIR        A, B and tl.dot's results written by kernels/triton/probe.py
// Each writes DIR/<source>.md (the table) and a sample of dots as .npy golden vectors, which the
// CPU tests replay (tests/reference/mma/golden_test.cpp). Exit status 1 when a share is below 100%.
#include <fmt/core.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <algorithm>
#include <fstream>
#include <functional>
#include <string>
#include <vector>
#include <xtensor/xadapt.hpp>

#include "mma_probe_kernel.hpp"
#include "reference/fp8/convert.hpp"
#include "reference/mma/instruction.hpp"
#include "validator/io/npy.hpp"

namespace {

using namespace mqa;
using fp8::format;
namespace fs = std::filesystem;

std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
double uniform(std::uint64_t& s) { return static_cast<double>(splitmix(s) >> 11) * 0x1p-53; }
double normal(std::uint64_t& s) {
  const double u = std::max(uniform(s), 0x1p-60), v = uniform(s);
  return std::sqrt(-2 * std::log(u)) * std::cos(6.283185307179586 * v);
}

constexpr const char* kStyles[] = {"uniform codes", "per-token scaled normal", "cancellation", "mixed exponents",
                                   "subnormals and zeros", "largest codes"};
constexpr int kStyleCount = 6;

std::uint8_t finite_code(format f, std::uint8_t code) {
  return std::isfinite(fp8::decode(f, code)) ? code : static_cast<std::uint8_t>(code & 0xF0);
}

// One row of `depth` codes in the given style.
void fill_row(format f, int style, std::uint64_t& s, std::uint8_t* row, int depth) {
  const fp8::conversion to{f, fp8::profile_id::ml_dtypes, std::nullopt};
  switch (style) {
    case 0:
      for (int k = 0; k < depth; ++k) row[k] = finite_code(f, static_cast<std::uint8_t>(splitmix(s)));
      break;
    case 1: {
      std::vector<double> x(static_cast<std::size_t>(depth));
      double amax = 0;
      for (auto& v : x) amax = std::max(amax, std::fabs(v = normal(s)));
      for (int k = 0; k < depth; ++k) row[k] = fp8::encode(to, x[static_cast<std::size_t>(k)] / amax * fp8::max_finite(f));
      break;
    }
    case 2:  // the second half cancels the first, one code apart here and there
      for (int k = 0; k < depth / 2; ++k) {
        row[k] = finite_code(f, static_cast<std::uint8_t>(splitmix(s)));
        std::uint8_t neg = static_cast<std::uint8_t>(row[k] ^ 0x80);
        if (splitmix(s) % 4 == 0) neg = finite_code(f, static_cast<std::uint8_t>(neg + 1));
        row[k + depth / 2] = neg;
      }
      break;
    case 3:  // every element either from the top or from the bottom binades
      for (int k = 0; k < depth; ++k) {
        const auto r = static_cast<std::uint8_t>(splitmix(s));
        row[k] = finite_code(f, static_cast<std::uint8_t>(r % 2 ? (r | 0x60) : (r & 0x9F)));
      }
      break;
    case 4:  // exponent field 0: zeros and subnormals only
      for (int k = 0; k < depth; ++k) row[k] = static_cast<std::uint8_t>(splitmix(s) & (f == format::e5m2 ? 0x83 : 0x87));
      break;
    default:
      for (int k = 0; k < depth; ++k) row[k] = finite_code(f, static_cast<std::uint8_t>(splitmix(s) | 0x70));
  }
}

float random_accumulator(std::uint64_t& s) {
  switch (splitmix(s) % 5) {
    case 0: return 0.0f;
    case 1: return static_cast<float>(std::ldexp(normal(s), static_cast<int>(splitmix(s) % 60) - 30));
    case 2: return std::bit_cast<float>(static_cast<std::uint32_t>(splitmix(s) & 0x807FFFFFu));  // subnormal
    case 3: return static_cast<float>(normal(s) * 1000.0);
    default: return static_cast<float>(std::ldexp(1.0 + uniform(s), static_cast<int>(splitmix(s) % 20)));
  }
}

// One batch of dots: row r of a against row r of b's block partner; flattened as dot x: a_row(x),
// b_row(x), c[x], d[x].
struct batch {
  format fa, fb;
  int depth = 128;
  std::vector<std::uint8_t> a, b;  // [dots, depth]
  std::vector<float> c, d;         // [dots]
  std::vector<int> style;          // [dots]
};

float model_chain(const mma::fused_step& step, std::uint32_t nan_bits, const batch& x, std::size_t t) {
  const auto& fa = fp8::decode_table(x.fa);
  const auto& fb = fp8::decode_table(x.fb);
  float acc = x.c[t];
  std::vector<double> a(32), b(32);
  for (int s = 0; s < x.depth / 32; ++s) {
    for (int k = 0; k < 32; ++k) {
      a[static_cast<std::size_t>(k)] = fa[x.a[t * static_cast<std::size_t>(x.depth) + static_cast<std::size_t>(32 * s + k)]];
      b[static_cast<std::size_t>(k)] = fb[x.b[t * static_cast<std::size_t>(x.depth) + static_cast<std::size_t>(32 * s + k)]];
    }
    acc = mma::fused_dot_add(step, acc, a, x.fa, b, x.fb, nan_bits);
  }
  return acc;
}

struct tally {
  std::int64_t dots = 0, exact = 0;
  std::vector<std::int64_t> per_style = std::vector<std::int64_t>(kStyleCount, 0), per_style_exact = per_style;
};

tally compare(const batch& x, const mma::fused_step& step, std::uint32_t nan_bits, std::vector<std::size_t>* misses) {
  tally t;
  for (std::size_t i = 0; i < x.d.size(); ++i) {
    const float m = model_chain(step, nan_bits, x, i);
    const bool same = std::bit_cast<std::uint32_t>(m) == std::bit_cast<std::uint32_t>(x.d[i]);
    ++t.dots, t.exact += same;
    ++t.per_style[static_cast<std::size_t>(x.style[i])], t.per_style_exact[static_cast<std::size_t>(x.style[i])] += same;
    if (!same && misses && misses->size() < 8) misses->push_back(i);
  }
  return t;
}

// Other plausible fused-step rules, scored where the model misses: what to fix if it is not exact.
std::string diagnose(const batch& x) {
  std::string out;
  std::vector<std::pair<double, std::string>> scores;
  batch sample = x;
  const std::size_t n = std::min<std::size_t>(x.d.size(), 20000);
  sample.d.resize(n), sample.c.resize(n), sample.style.resize(n);
  for (const int bits : {12, 13, 14, 15, 16, 23, 24})
    for (const int result : {13, 14, 23})
      for (const auto term : {mma::rounding::toward_zero, mma::rounding::down, mma::rounding::nearest_even})
        for (const auto final_rule : {mma::rounding::toward_zero, mma::rounding::nearest_even}) {
          mma::fused_step s = mma::sm90_wgmma().step;
          s.term_bits = bits, s.result_bits = result, s.term_rule = term, s.result_rule = final_rule;
          const tally t = compare(sample, s, mma::sm90_wgmma().nan_bits, nullptr);
          scores.push_back({static_cast<double>(t.exact) / static_cast<double>(t.dots),
                            fmt::format("term bits {} ({}), result bits {} ({})", bits, static_cast<int>(term), result,
                                        static_cast<int>(final_rule))});
        }
  std::sort(scores.rbegin(), scores.rend());
  for (std::size_t i = 0; i < 5 && i < scores.size(); ++i)
    out += fmt::format("  candidate {:.6f}  {}\n", scores[i].first, scores[i].second);
  return out;
}

// Chains promoted into float32 every P elements (what a kernel that promotes computes).
std::string promotion_candidates(const batch& x) {
  std::string out;
  const auto& ins = mma::sm90_wgmma();
  const auto& fa = fp8::decode_table(x.fa);
  const auto& fb = fp8::decode_table(x.fb);
  for (const int every : {32, 64}) {
    if (x.depth % every != 0 || every == x.depth) continue;
    std::int64_t exact = 0, total = 0;
    std::vector<double> a(static_cast<std::size_t>(x.depth)), b(a.size());
    for (std::size_t t = 0; t < std::min<std::size_t>(x.d.size(), 20000); ++t) {
      for (int k = 0; k < x.depth; ++k) {
        a[static_cast<std::size_t>(k)] = fa[x.a[t * static_cast<std::size_t>(x.depth) + static_cast<std::size_t>(k)]];
        b[static_cast<std::size_t>(k)] = fb[x.b[t * static_cast<std::size_t>(x.depth) + static_cast<std::size_t>(k)]];
      }
      const float m = mma::dot(ins, a, x.fa, b, x.fb, every);
      exact += std::bit_cast<std::uint32_t>(m) == std::bit_cast<std::uint32_t>(x.d[t]);
      ++total;
    }
    out += fmt::format("  promoted every {}: {:.6f}\n", every, static_cast<double>(exact) / static_cast<double>(total));
  }
  return out;
}

void write_golden(const fs::path& dir, const std::string& name, const batch& x, std::size_t keep) {
  const std::size_t n = x.d.size(), stride = std::max<std::size_t>(n / keep, 1);
  std::vector<std::uint8_t> a, b;
  std::vector<float> c, d;
  for (std::size_t i = 0; i < n; i += stride) {
    a.insert(a.end(), x.a.begin() + static_cast<std::ptrdiff_t>(i * x.depth), x.a.begin() + static_cast<std::ptrdiff_t>((i + 1) * x.depth));
    b.insert(b.end(), x.b.begin() + static_cast<std::ptrdiff_t>(i * x.depth), x.b.begin() + static_cast<std::ptrdiff_t>((i + 1) * x.depth));
    c.push_back(x.c[i]), d.push_back(x.d[i]);
  }
  const std::size_t kept = c.size(), depth = static_cast<std::size_t>(x.depth);
  io::write_npy(dir / (name + ".a.npy"), xt::xarray<std::uint8_t>(xt::adapt(a, std::vector<std::size_t>{kept, depth})));
  io::write_npy(dir / (name + ".b.npy"), xt::xarray<std::uint8_t>(xt::adapt(b, std::vector<std::size_t>{kept, depth})));
  io::write_npy(dir / (name + ".c.npy"), xt::xarray<float>(xt::adapt(c, std::vector<std::size_t>{kept})));
  io::write_npy(dir / (name + ".d.npy"), xt::xarray<float>(xt::adapt(d, std::vector<std::size_t>{kept})));
}

std::string report(const std::string& title, const batch& x, const tally& t, const std::vector<std::size_t>& misses) {
  std::string md = fmt::format("| {} | {} x {} | D = {} | {} | {} | {:.6f} |\n", title, fp8::traits(x.fa).name,
                               fp8::traits(x.fb).name, x.depth, t.dots, t.exact,
                               static_cast<double>(t.exact) / static_cast<double>(t.dots));
  for (int s = 0; s < kStyleCount; ++s)
    if (t.per_style[static_cast<std::size_t>(s)] != t.per_style_exact[static_cast<std::size_t>(s)])
      md += fmt::format("|  style '{}' | | | {} | {} | |\n", kStyles[s], t.per_style[static_cast<std::size_t>(s)],
                        t.per_style_exact[static_cast<std::size_t>(s)]);
  for (const auto i : misses)
    md += fmt::format("|  miss at dot {} (style '{}'): c {:a} hardware {:a} ({:08X}) model {:a} | | | | | |\n", i,
                      kStyles[x.style[i]], x.c[i], x.d[i], std::bit_cast<std::uint32_t>(x.d[i]),
                      model_chain(mma::sm90_wgmma().step, mma::sm90_wgmma().nan_bits, x, i));
  return md;
}

int probe_wgmma(const fs::path& dir, int blocks_per_style) {
  std::string md = "# sm90-wgmma model against inline-PTX wgmma.mma_async m64n64k32 (mqa_mma_probe)\n\n"
                   "| probe | formats | depth | dots | bit-exact | share |\n|---|---|---|---:|---:|---:|\n";
  bool all_exact = true;
  const format kinds[] = {format::e4m3fn, format::e5m2};
  for (const format fa : kinds)
    for (const format fb : kinds)
      for (const int steps : {4, 1}) {  // chains over D = 128 from 0; single steps from assorted C
        batch x{fa, fb, 32 * steps, {}, {}, {}, {}, {}};
        const int per_style = (fa == fb && steps == 4) ? blocks_per_style : std::max(blocks_per_style / 8, 1);
        const int blocks = per_style * kStyleCount;
        const std::size_t dots = static_cast<std::size_t>(blocks) * 4096, depth = static_cast<std::size_t>(x.depth);
        std::vector<std::uint8_t> a(static_cast<std::size_t>(blocks) * 64 * depth), b(a.size());
        std::vector<float> c(dots), d(dots);
        std::uint64_t seed = 0xC0FFEE + static_cast<std::uint64_t>(static_cast<int>(fa) * 16 + static_cast<int>(fb) * 4 + steps);
        for (int blk = 0; blk < blocks; ++blk) {
          const int style = blk % kStyleCount;
          for (int r = 0; r < 64; ++r) {
            fill_row(fa, style, seed, a.data() + (static_cast<std::size_t>(blk) * 64 + static_cast<std::size_t>(r)) * depth, x.depth);
            fill_row(fb, style, seed, b.data() + (static_cast<std::size_t>(blk) * 64 + static_cast<std::size_t>(r)) * depth, x.depth);
          }
          for (int e = 0; e < 4096; ++e) c[static_cast<std::size_t>(blk) * 4096 + static_cast<std::size_t>(e)] = steps == 4 ? 0.0f : random_accumulator(seed);
        }
        gpu_test::run_wgmma_probe(fa == format::e5m2, fb == format::e5m2, a.data(), b.data(), c.data(), d.data(), blocks, steps);
        // Flatten: dot (blk, i, n) = row i of a's block with row n of b's block.
        x.a.resize(dots * depth), x.b.resize(dots * depth), x.c = c, x.d = d, x.style.resize(dots);
        for (int blk = 0; blk < blocks; ++blk)
          for (int i = 0; i < 64; ++i)
            for (int n = 0; n < 64; ++n) {
              const std::size_t t = static_cast<std::size_t>(blk) * 4096 + static_cast<std::size_t>(i) * 64 + static_cast<std::size_t>(n);
              std::copy_n(a.begin() + static_cast<std::ptrdiff_t>((static_cast<std::size_t>(blk) * 64 + static_cast<std::size_t>(i)) * depth), depth, x.a.begin() + static_cast<std::ptrdiff_t>(t * depth));
              std::copy_n(b.begin() + static_cast<std::ptrdiff_t>((static_cast<std::size_t>(blk) * 64 + static_cast<std::size_t>(n)) * depth), depth, x.b.begin() + static_cast<std::ptrdiff_t>(t * depth));
              x.style[t] = blk % kStyleCount;
            }
        std::vector<std::size_t> misses;
        const tally t = compare(x, mma::sm90_wgmma().step, mma::sm90_wgmma().nan_bits, &misses);
        md += report(steps == 4 ? "chain from 0" : "one step from C", x, t, misses);
        fmt::print("wgmma {} x {} depth {}: {} of {} bit-exact\n", fp8::traits(fa).name, fp8::traits(fb).name, x.depth,
                   t.exact, t.dots);
        if (t.exact != t.dots) {
          all_exact = false;
          const std::string d_text = diagnose(x);
          fmt::print("{}", d_text);
          md += "\n```\n" + d_text + "```\n\n";
        }
        write_golden(dir, fmt::format("wgmma.{}.{}.d{}", fp8::traits(fa).name, fp8::traits(fb).name, x.depth), x,
                     steps == 4 ? 1536 : 512);
      }
  std::ofstream(dir / "wgmma.md") << md;
  return all_exact ? 0 : 1;
}

int verify_triton(const fs::path& dir) {
  std::string md = "# sm90-wgmma model against Triton tl.dot (kernels/triton/probe.py)\n\n"
                   "| probe | formats | depth | dots | bit-exact | share |\n|---|---|---|---:|---:|---:|\n";
  bool all_exact = true;
  std::vector<fs::path> operands;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("triton.") && name.ends_with(".a.npy") && std::count(name.begin(), name.end(), '.') == 5)
      operands.push_back(entry.path());
  }
  std::sort(operands.begin(), operands.end());
  bool golden_written = false;
  for (const auto& file : operands) {
    // triton.<config>.<fa>.<fb>.a.npy
    const std::string name = file.filename().string();
    const std::string stem = name.substr(0, name.size() - 6);
    std::vector<std::string> parts;
    for (std::size_t at = 0, next; at <= stem.size(); at = next + 1) {
      next = stem.find('.', at);
      if (next == std::string::npos) next = stem.size();
      parts.push_back(stem.substr(at, next - at));
    }
    const auto fa = fp8::parse_format(parts[2]), fb = fp8::parse_format(parts[3]);
    if (!fa || !fb) continue;
    const auto a = io::read_npy<std::uint8_t>(dir / (stem + ".a.npy"));
    const auto b = io::read_npy<std::uint8_t>(dir / (stem + ".b.npy"));
    const auto d = io::read_npy<float>(dir / (stem + ".d.npy"));
    const auto style = io::read_npy<std::int32_t>(dir / (stem + ".style.npy"));
    const std::size_t rows = a.shape()[0], cols = b.shape()[0], depth = a.shape()[1];
    batch x{*fa, *fb, static_cast<int>(depth), {}, {}, {}, {}, {}};
    x.a.resize(rows * cols * depth), x.b.resize(rows * cols * depth), x.c.assign(rows * cols, 0.0f), x.d.resize(rows * cols);
    x.style.resize(rows * cols);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t n = 0; n < cols; ++n) {
        const std::size_t t = i * cols + n;
        std::copy_n(a.data() + i * depth, depth, x.a.data() + t * depth);
        std::copy_n(b.data() + n * depth, depth, x.b.data() + t * depth);
        x.d[t] = d(i, n);
        x.style[t] = style(i) % kStyleCount;
      }
    std::vector<std::size_t> misses;
    const tally t = compare(x, mma::sm90_wgmma().step, mma::sm90_wgmma().nan_bits, &misses);
    md += report(fmt::format("tl.dot {} chain from 0", parts[1]), x, t, misses);
    fmt::print("triton {} {} x {} depth {}: {} of {} bit-exact\n", parts[1], parts[2], parts[3], depth, t.exact, t.dots);
    if (t.exact != t.dots) {
      all_exact = false;
      const std::string d_text = diagnose(x) + promotion_candidates(x);
      fmt::print("{}", d_text);
      md += "\n```\n" + d_text + "```\n\n";
    }
    if (parts[1] == "m64n64k128") {
      write_golden(dir, fmt::format("triton.{}.{}.d{}", parts[2], parts[3], depth), x, 1024);
      golden_written = true;
    }
  }
  if (!golden_written) fmt::print("no Triton probe results in {}\n", dir.string());
  std::ofstream(dir / "triton.md") << md;
  return all_exact && golden_written ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.size() >= 2 && args[0] == "--out") {
      fs::create_directories(args[1]);
      const int blocks = args.size() >= 4 && args[2] == "--blocks-per-style" ? std::stoi(args[3]) : 43;
      return probe_wgmma(args[1], blocks);
    }
    if (args.size() == 2 && args[0] == "--verify-triton") return verify_triton(args[1]);
  } catch (const std::exception& e) {
    fmt::print(stderr, "mqa_mma_probe: {}\n", e.what());
    return 2;
  }
  fmt::print(stderr, "usage: mqa_mma_probe --out DIR [--blocks-per-style N] | --verify-triton DIR\n");
  return 2;
}
