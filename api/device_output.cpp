#include <fmt/core.h>

#include <chrono>
#include <memory>
#include <stdexcept>

#include "api/check.hpp"
#include "api/reference_engine.hpp"
#include "validator/input_error.hpp"
#include "validator/judge/bundle.hpp"
#include "validator/judge/judge.hpp"
#include "validator/judge/suspicion.hpp"

#ifdef MQA_HAVE_GPU
#include "api/device_judge.hpp"
#include "validator/compare/device/judge_args.hpp"
#endif

namespace mqa::api {

#ifdef MQA_HAVE_GPU

namespace device_path {

current_device_kept::current_device_kept() : device_(compare::device::current_device()) {}

current_device_kept::~current_device_kept() {
  try {
    if (compare::device::current_device() != device_) compare::device::use_device(device_);
  } catch (const std::runtime_error&) {  // a destructor does not throw: the runtime is already broken
  }
}

namespace {

std::size_t element_bytes(const output_array& a) { return a.type == output_array::element::bfloat16 ? 2 : 4; }

// Whether the two launches differ anywhere the host's determinism check looks (judge::finish over
// every row of the output: the whole row under a clean contract, the window otherwise), compared on
// the device.
bool launches_differ(const compare::subject& s, const output_array& a, const output_array& repeat) {
  std::vector<compare::device::compared_range> ranges;
  const bool clean = s.contract.mask == kernels::masking::clean;
  for (std::int64_t i = 0; i < s.problem->m; ++i) {
    const exact::window w = exact::clamped_window(*s.problem, i);
    ranges.push_back({i, clean ? 0 : w.begin, clean ? s.problem->n : std::max(w.begin, w.end)});
  }
  return compare::device::differing_elements(static_cast<const float*>(a.data), static_cast<const float*>(repeat.data),
                                             a.row_stride, ranges.data(), static_cast<std::int64_t>(ranges.size())) > 0;
}

}  // namespace

std::vector<std::int64_t> witnessed_on_device(const compare::subject& s) {
  return s.centre != nullptr ? judge::witnessed_rows(s) : std::vector<std::int64_t>{};
}

host_copy copied_to_host(const output_array& a, const char* what) {
  host_copy c;
  const std::size_t bytes =
      static_cast<std::size_t>(std::max<std::int64_t>(a.rows - 1, 0) * a.row_stride + a.cols) * element_bytes(a);
  const std::size_t size = a.rows > 0 ? bytes : 0;
  c.bytes = std::make_unique_for_overwrite<char[]>(size);
  compare::device::use_device(a.device);
  compare::device::copy_from_device(c.bytes.get(), a.data, size, what);
  c.array = a;
  c.array.data = c.bytes.get();
  c.array.device = -1;
  return c;
}

std::optional<std::string> unsuited(const exact::problem& p, const kernels::contract& c, const output_array& a,
                                    const output_array* repeat) {
  if (c.columns != kernels::columns_layout::absolute) return "relative columns";
  if (a.type != output_array::element::float32 || c.logits == bounds::logits_precision::bf16)
    return "bfloat16 logits (the device comparator reads float32)";
  if (a.rows != p.m || a.cols < p.n || a.row_stride < a.cols)
    return "not the case's float32 [m, S >= n]";  // the host's checks name what is wrong
  if (repeat != nullptr && (repeat->device != a.device || repeat->type != a.type || repeat->rows != a.rows ||
                            repeat->cols != a.cols || repeat->row_stride != a.row_stride))
    return "the repeat is not laid out as the logits on their device";
  return std::nullopt;
}

verdict judge(compare::subject s, const output_array& a, const output_array* repeat,
              const device_references& references, judge::seconds* spent) {
  judge::seconds own;
  judge::seconds& t = spent ? *spent : own;
  if (const auto why = compare::device::unsupported(s)) return {std::nullopt, *why};
  const std::shared_ptr<const compare::device::references> r = references(s, a.device);
  auto start = std::chrono::steady_clock::now();
  const compare::device::device_judgement d =
      compare::device::judge(s, *r, {static_cast<const float*>(a.data), a.rows, s.problem->n, a.row_stride, a.device});
  t.compare += judge::seconds_since(start);
  t.compare_kernel += d.kernel_seconds;
  t.compare_download += d.download_seconds;
  t.compare_summary += d.summary_seconds;
  if (!d.judged) return {std::nullopt, d.findings > 0 ? fmt::format("{} elements a finding is made of", d.findings) : d.why};
  start = std::chrono::steady_clock::now();
  const bool differ = repeat != nullptr && s.contract.deterministic && launches_differ(s, a, *repeat);
  t.determinism += judge::seconds_since(start);
  if (differ) return {std::nullopt, "the two launches differ"};
  compare::judgement j = *d.judged;
  start = std::chrono::steady_clock::now();
  if (d.witness) {  // the centre is the witness: counted by the device comparator
    if (judge::suspected(*d.witness)) j.suspected = *d.witness;
  } else if (const std::vector<std::int64_t> rows = judge::witnessed_rows(s); !rows.empty()) {
    // The suspicion note's witness (a CPU model) reads these rows alone: they are copied, packed,
    // to the host.
    const auto n = static_cast<std::size_t>(s.problem->n);
    std::vector<float> witnessed(rows.size() * n);
    for (std::size_t r = 0; r < rows.size(); ++r)
      compare::device::copy_from_device(witnessed.data() + r * n, static_cast<const float*>(a.data) + rows[r] * a.row_stride,
                                        n * sizeof(float), "copy the witnessed rows to the host");
    if (const auto counts = judge::answer_copy_counts(s, witnessed); counts && judge::suspected(*counts)) j.suspected = *counts;
  }
  t.suspicion += judge::seconds_since(start);
  // What the judge adds to the comparator's judgement of an output without findings: nothing more
  // (no launch findings, the launches agree, nothing to diagnose).
  s.reference = nullptr;
  s.centre = nullptr;
  judge::finish(s, j, {.diagnose = false, .launch_findings = {}}, nullptr);
  return {std::move(j), {}};
}

}  // namespace device_path

namespace {

// The outputs brought to the host and judged there.
compare::judgement judged_on_host(const bundle_under_check& b, const output_array& a, const output_array* repeat,
                                  const judge_options& o) {
  // Refused before a copy is sized by their layout (rows that run backwards would size it negative).
  check_output_array(a, "logits", b.problem, b.contract);
  if (repeat != nullptr) check_output_array(*repeat, "repeat", b.problem, b.contract);
  const device_path::host_copy first = device_path::copied_to_host(a, "copy the output to the host");
  judged_output out = judged_from_memory(first.array, "logits", b.problem, b.contract);
  if (repeat == nullptr) return judge_output(b, out.view(), std::nullopt, o);
  const device_path::host_copy second = device_path::copied_to_host(*repeat, "copy the repeat to the host");
  judged_output again = judged_from_memory(second.array, "repeat", b.problem, b.contract);
  return judge_output(b, out.view(), again.view(), o);
}

device_path::verdict judged_on_device(const bundle_under_check& b, const output_array& a, const output_array* repeat,
                                      const judge_options& o, device_judging& report) {
  const paged::problem* paged = b.paged ? &*b.paged : nullptr;
  if (paged) return {std::nullopt, "a paged bundle"};
  if (const auto why = device_path::unsuited(b.problem, b.contract, a, repeat)) return {std::nullopt, *why};
  if (o.references == nullptr || o.topk_indices != nullptr) return {std::nullopt, "no reference store, or top-k indices"};
  if (judge::estimated_bytes(b.inputs, b.problem, paged, b.contract, reference_engines()) > o.references->capacity())
    return {std::nullopt, "the references do not fit in the reference store"};
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const judge::references> kept = o.references->find(&b);
  if (!kept) {
    kept = std::make_shared<const judge::references>(
        judge::judged_references(b.inputs, b.problem, paged, b.contract, o.threads, reference_engines()));
    o.references->put(&b, kept);
    report.computed = kept->spent;
  }
  report.references = judge::seconds_since(start);
  // The subject judge_against judges: its output is read on the device only (and, where a CPU model
  // is the suspicion note's witness, the few rows it reads, copied to the host).
  compare::subject s = compare::subject_of(b.problem, paged, b.contract, b.inputs.spec.topk,
                                           {nullptr, b.problem.m, b.problem.n, a.row_stride}, o.threads);
  s.reference = &kept->judged;
  s.centre = kept->centre_or_null();
  // The device copy lives beside the host references in the store, re-uploaded for another GPU.
  return device_path::judge(s, a, repeat, [&](const compare::subject& subject, int device) {
    auto references = std::static_pointer_cast<const compare::device::references>(o.references->find_device(&b));
    if (!references || references->device() != device) {
      const auto copying = std::chrono::steady_clock::now();
      references = std::make_shared<const compare::device::references>(subject, device,
                                                                       device_path::witnessed_on_device(subject));
      o.references->put_device(&b, references, references->bytes());
      report.device_copy = judge::seconds_since(copying);
    }
    return references;
  }, &report.device);
}

}  // namespace

compare::judgement judge_device_output(const bundle_under_check& b, const output_array& a,
                                       const output_array* repeat, const judge_options& o, device_judging* report) {
  // The steps are reported once the judgement is made: one that fails reports none.
  if (report != nullptr) *report = {};
  device_judging r;
  const device_path::current_device_kept caller;
  device_path::verdict d;
  try {
    d = judged_on_device(b, a, repeat, o, r);
  } catch (const input_error&) {  // the bundle's, not the device's: the host would say the same
    throw;
  } catch (const std::logic_error&) {  // a broken invariant (the GPU and CPU references disagree, say): not hidden
    throw;
  } catch (const std::exception& e) {  // the device (or the host's memory) refused: the host judges
    d = {std::nullopt, fmt::format("the device failed: {}", e.what())};
  }
  compare::judgement j;
  if (d.judged) {
    r.judged_on = "device";
    j = std::move(*d.judged);
  } else {
    r.judged_on = "host: " + d.why;
    const auto start = std::chrono::steady_clock::now();
    j = judged_on_host(b, a, repeat, o);  // a device that failed for good fails this copy too
    r.host = judge::seconds_since(start);
  }
  if (report != nullptr) *report = std::move(r);
  return j;
}

#else

compare::judgement judge_device_output(const bundle_under_check&, const output_array& a, const output_array*,
                                       const judge_options&, device_judging*) {
  throw input_error(fmt::format("logits: a tensor on GPU {} and this build has no GPU path (configure with "
                                "-DMQA_GPU=CUDA or HIP), or move the tensors to the host with .cpu()",
                                a.device));
}

#endif

}  // namespace mqa::api
