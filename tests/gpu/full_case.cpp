// mqa_gpu_full: the full-size end-to-end run on a GPU. Builds the inputs, computes the exact
// reference on the GPU (cross-checked against the CPU reference), runs every GPU variant and
// mutant twice, judges each with the validator's comparator, and prints what it measured as a
// Markdown report. Exit status 0 when every correct variant passes and every mutant produces
// its finding (where the case can show it), 1 otherwise, 2 for bad arguments.
//
//   mqa_gpu_full [--m 8192] [--n 65536] [--heads 64] [--dim 128] [--report FILE] [--variants a,b]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "judge_variant.hpp"
#include "kernels/gpu/registry.hpp"
#include "kernels/gpu/runner.hpp"
#include "reference/exact/gpu/exact_logits.hpp"
#include "reference/mma/instruction.hpp"

namespace {

using namespace mqa;
using clock_type = std::chrono::steady_clock;

double since(clock_type::time_point t) { return std::chrono::duration<double>(clock_type::now() - t).count(); }

struct options {
  std::int64_t m = 8192, n = 65536, heads = 64, dim = 128;
  std::string report;
  std::vector<std::string> variants;  // empty: all
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  for (std::string part; std::getline(in, part, ',');)
    if (!part.empty()) parts.push_back(part);
  return parts;
}

options parse(int argc, char** argv) {
  options o;
  for (int a = 1; a < argc; ++a) {
    const std::string flag = argv[a];
    if (a + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    const std::string value = argv[++a];
    if (flag == "--m") o.m = std::stoll(value);
    else if (flag == "--n") o.n = std::stoll(value);
    else if (flag == "--heads") o.heads = std::stoll(value);
    else if (flag == "--dim") o.dim = std::stoll(value);
    else if (flag == "--report") o.report = value;
    else if (flag == "--variants") o.variants = split(value);
    else throw std::invalid_argument("unknown flag " + flag + " (accepted: --m --n --heads --dim --report --variants)");
  }
  if (o.m <= 0 || o.n <= 0 || o.heads <= 0 || o.dim <= 0) throw std::invalid_argument("sizes must be positive");
  return o;
}

// 2 * heads * head_dim flops per in-window element: the dot products, which dominate.
double dot_flops(const gpu_test::owned_problem& p) {
  double elements = 0;
  for (std::int64_t i = 0; i < p.m; ++i) {
    const exact::window w = exact::clamped_window(p.view(), i);
    if (!w.empty()) elements += static_cast<double>(w.end - w.begin);
  }
  return elements * 2.0 * static_cast<double>(p.heads * p.head_dim);
}

// One problem: reference, then every selected variant. Appends Markdown to `md`.
bool run_case(const gpu_test::problem_spec& spec, const options& o, std::ostream& md) {
  bool ok = true;
  md << "\n## " << spec.name << "\n\n";
  auto start = clock_type::now();
  const gpu_test::owned_problem p = gpu_test::make_problem(spec);
  const double input_seconds = since(start);
  const double flops = dot_flops(p);
  md << "m = " << p.m << ", n = " << p.n << ", heads = " << p.heads << ", head_dim = " << p.head_dim
     << ", stride = " << p.stride << ", q " << fp8::traits(p.q_format).name << ", k " << fp8::traits(p.k_format).name
     << "; in-window dot products: " << flops / 1e12 << " TFLOP. Inputs generated in " << input_seconds << " s.\n\n";

  start = clock_type::now();
  gpu::exact_gpu_report rep;
  const exact::result reference = gpu::exact_logits(p.view(), {}, &rep);
  const double reference_seconds = since(start);
  md << "Exact reference on the GPU: " << reference_seconds << " s in all; kernels " << rep.kernel_seconds
     << " s (" << flops / rep.kernel_seconds / 1e12 << " TFLOP/s of in-window exact dot products, dots by "
     << rep.dot_engine << "; as float64 work: " << 100 * flops / rep.kernel_seconds / 34e12
     << " % of the H200's 34 TFLOP/s fp64 vector peak, " << 100 * flops / rep.kernel_seconds / 67e12
     << " % of its 67 TFLOP/s fp64 tensor-core peak; three int8 slices cost 9 int8 products per multiply-add, "
     << 100 * 9 * flops / rep.kernel_seconds / 1979e12 << " % of its 1979 TOPS dense int8 peak); "
     << "upload + kernels + download " << rep.device_seconds << " s, of which host allocation of the result "
     << rep.allocation_seconds << " s (overlapping the kernels); CPU fallback " << rep.fallback_seconds
     << " s for " << rep.open_elements << " open elements and " << rep.special_rows << " special rows; "
     << "cross-check " << rep.cross_check_seconds << " s on " << rep.cross_checked << " elements (all equal).\n\n";

  // A modelled contract's centre on every row (centre_kernel.hip): the instruction model for the
  // problem's formats, its time against the exact reference's in the same run.
  for (const mma::instruction* model : {&mma::sm90_wgmma(), &mma::gfx942_mfma()}) {
    gpu::exact_gpu_options centred;
    centred.reference.dot_model = model;
    if (!gpu::modelled_centre_on_device(p.view(), centred.reference)) continue;
    start = clock_type::now();
    gpu::exact_gpu_report centre_rep;
    const exact::result centre = gpu::exact_logits(p.view(), centred, &centre_rep);
    const double centre_seconds = since(start);
    md << "The " << model->name << " centre on every row (" << centre.rows.size() << " rows) on the GPU: "
       << centre_seconds << " s in all (" << centre_seconds / reference_seconds
       << "x the exact reference's); kernels " << centre_rep.kernel_seconds << " s ("
       << centre_rep.kernel_seconds / rep.kernel_seconds << "x the exact reference's kernels); CPU fallback "
       << centre_rep.fallback_seconds << " s for " << centre_rep.open_elements << " open elements; cross-check "
       << centre_rep.cross_check_seconds << " s on " << centre_rep.cross_checked
       << " elements against the CPU's model (all equal).\n\n";
  }

  // The other dot engines on the same problem (the integer one's mma.sync form where the default
  // was its wgmma form, and float64): their time, and every bit against the default's.
  for (const bool integer : {true, false}) {
    if (integer && !gpu::warpgroup_dots_available()) continue;  // the default was mma.sync or float64
    if (!integer && !gpu::integer_dots_available()) continue;   // the default was float64
    gpu::exact_gpu_options other;
    other.integer_dots = integer;
    other.warpgroup_dots = false;
    gpu::exact_gpu_report other_rep;
    const exact::result second = gpu::exact_logits(p.view(), other, &other_rep);
    if (other_rep.dot_engine == rep.dot_engine) continue;  // head_dim above 128: the default was mma.sync
    std::size_t differ = second.logits.size() == reference.logits.size() ? 0 : reference.logits.size();
    if (differ == 0)
      for (std::size_t x = 0; x < reference.logits.size(); ++x)
        differ += std::memcmp(&second.logits[x], &reference.logits[x], sizeof(float)) != 0;
    md << "Dot engines on this problem, kernels alone: " << rep.dot_engine << " " << rep.kernel_seconds << " s; "
       << other_rep.dot_engine << " " << other_rep.kernel_seconds << " s; logits that differ between them: "
       << differ << " of " << reference.logits.size() << ".\n\n";
    if (differ != 0) ok = false;
  }
  md << "| variant | kernel s (run 0, run 1) | eff. TFLOP/s | 2 runs s (wall) | judge s | expected | findings | result |\n"
     << "|---|---|---|---|---|---|---|---|\n";
  double fastest = 0;
  std::string fastest_line;
  gpu_test::output_buffers buffers;  // allocated by the first variant, reused by the others
  for (const auto& v : kernels::gpu_variants()) {
    if (!o.variants.empty() && std::find(o.variants.begin(), o.variants.end(), v.name) == o.variants.end()) continue;
    std::string result, expected = v.must_produce.empty() ? "pass" : v.must_produce.front();
    gpu_test::variant_verdict verdict;
    try {
      verdict = gpu_test::judge_variant(v, p, reference, buffers);
    } catch (const std::invalid_argument& e) {  // a kernel that does not take these inputs
      md << "| " << v.name << " | - | - | - | - | " << expected << " | not run: " << e.what() << " | n/a |\n";
      continue;
    }
    const bool tail_invisible = v.name == "hip-tiled-tail" && p.n % 256 == 0;
    // The last element's byte offset must pass 2^31 for an int32 offset to overflow.
    const bool offset_invisible =
        v.name == "hip-tiled-offset32" && ((p.m - 1) * p.stride + p.n - 1) * 4 < (std::int64_t{1} << 31);
    if (v.must_produce.empty()) {
      result = verdict.findings.empty() ? "ok" : "FAIL";
      if (verdict.findings.empty() && (fastest == 0 || verdict.first.kernel_seconds < fastest)) {
        fastest = verdict.first.kernel_seconds;
        fastest_line = v.name + ": inputs " + std::to_string(input_seconds) + " s + exact reference " +
                       std::to_string(reference_seconds) + " s + host memory for two outputs " +
                       std::to_string(buffers.allocation_seconds) + " s + two runs " +
                       std::to_string(verdict.runs_seconds) + " s + judging " + std::to_string(verdict.judge_seconds) +
                       " s = " +
                       std::to_string(input_seconds + reference_seconds + buffers.allocation_seconds +
                                      verdict.runs_seconds + verdict.judge_seconds) +
                       " s";
      }
    } else if (tail_invisible || offset_invisible) {
      result = "n/a (the case cannot show it)";
    } else if (v.name == "hip-naive-end-inclusive" && spec.windows == gpu_test::layout::ragged) {
      // The comparator counts a row with ks > ke as one that could show an end shift (it places
      // the empty window at ks), while j <= ke still leaves it empty: it then says mask-leak.
      expected = "mask-shift or mask-leak";
      result = verdict.has("mask-shift") || verdict.has("mask-leak") ? "ok" : "FAIL";
    } else {
      result = verdict.has(expected) ? "ok" : "FAIL";
    }
    if (result == "FAIL") ok = false;
    md << "| " << v.name << " | " << verdict.first.kernel_seconds << ", " << verdict.second.kernel_seconds << " | "
       << flops / verdict.first.kernel_seconds / 1e12 << " | " << verdict.runs_seconds << " | " << verdict.judge_seconds
       << " | " << expected << " | "
       << verdict.summary() << " | " << result << " |\n";
    std::cout << v.name << ": " << verdict.summary() << " -> " << result << std::endl;
  }
  if (fastest > 0) {
    md << "\nExact reference kernels / fastest correct variant's kernel: " << rep.kernel_seconds / fastest << "x.\n";
    md << "\nOne validation end to end, fastest correct variant " << fastest_line << ".\n";
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "mqa_gpu_full: " << e.what() << "\n";
    return 2;
  }
  const gpu::device_info device = gpu::probe_device();
  if (!device.usable) {
    std::cerr << "mqa_gpu_full: " << device.description << "\n";
    return 1;
  }
  std::ostringstream md;
  md << "# mqacheck GPU run\n\nDevice: " << device.description << "\n";
  const auto start = clock_type::now();
  bool ok = true;
  // The output stride is padded by 256 floats, as DeepGEMM and AITER pad it: at 8192 x 65536 the
  // last rows then lie past 2^31 bytes, where a 32-bit offset overflows.
  gpu_test::problem_spec full{"full size, causal, e4m3fn, stride n + 256", o.m, o.n, o.heads, o.dim, o.n + 256,
                              fp8::format::e4m3fn, fp8::format::e4m3fn, gpu_test::layout::causal, 2026};
  try {
    auto t = clock_type::now();
    ok &= run_case(full, o, md);
    md << "\nEnd to end for this case (inputs, reference, every variant twice, judging): " << since(t) << " s.\n";
    // A second shape for the mutants the full case cannot show: n % 256 != 0, padded stride,
    // ragged windows, fnuz formats.
    gpu_test::problem_spec ragged{"ragged windows, e4m3fnuz, n % 256 != 0, stride 2^18 + 256", 2048, 30000, o.heads,
                                  o.dim, (1 << 18) + 256, fp8::format::e4m3fnuz, fp8::format::e4m3fnuz,
                                  gpu_test::layout::ragged, 2027};
    ok &= run_case(ragged, o, md);
  } catch (const std::exception& e) {
    md << "\n**Error:** " << e.what() << "\n";
    ok = false;
  }
  md << "\nTotal: " << since(start) << " s. Verdict: " << (ok ? "every expectation met" : "FAILED") << "\n";
  std::cout << md.str();
  if (!o.report.empty()) std::ofstream(o.report) << md.str();
  return ok ? 0 : 1;
}
