#include <fmt/core.h>

#include <stdexcept>

#include "api/check.hpp"
#include "api/reference_engine.hpp"
#include "validator/input_error.hpp"
#include "validator/judge/bundle.hpp"
#include "validator/judge/judge.hpp"

#ifdef MQA_HAVE_GPU
#include "validator/compare/device/device_comparator.hpp"
#include "validator/compare/device/judge_args.hpp"
#endif

namespace mqa::api {

#ifdef MQA_HAVE_GPU
namespace {

std::size_t element_bytes(const output_array& a) { return a.type == output_array::element::bfloat16 ? 2 : 4; }

// The calling thread's current GPU, given back when the judgement is done (the caller's framework
// keeps its own).
class current_device_kept {
 public:
  current_device_kept() : device_(compare::device::current_device()) {}
  ~current_device_kept() {
    try {
      if (compare::device::current_device() != device_) compare::device::use_device(device_);
    } catch (const std::runtime_error&) {  // a destructor does not throw: the runtime is already broken
    }
  }
  current_device_kept(const current_device_kept&) = delete;
  current_device_kept& operator=(const current_device_kept&) = delete;

 private:
  int device_;
};

// A device array brought to the host whole, laid out as it was.
struct host_copy {
  std::vector<char> bytes;
  output_array array;
};
host_copy copied_to_host(const output_array& a, const char* what) {
  host_copy c;
  const std::size_t bytes =
      static_cast<std::size_t>(std::max<std::int64_t>(a.rows - 1, 0) * a.row_stride + a.cols) * element_bytes(a);
  c.bytes.resize(a.rows > 0 ? bytes : 0);
  compare::device::use_device(a.device);
  compare::device::copy_from_device(c.bytes.data(), a.data, c.bytes.size(), what);
  c.array = a;
  c.array.data = c.bytes.data();
  c.array.device = -1;
  return c;
}

// The outputs brought to the host and judged there.
compare::judgement judged_on_host(const bundle_under_check& b, const output_array& a, const output_array* repeat,
                                  const judge_options& o) {
  const host_copy first = copied_to_host(a, "copy the output to the host");
  judged_output out = judged_from_memory(first.array, "logits", b.problem, b.contract);
  if (repeat == nullptr) return judge_output(b, out.view(), std::nullopt, o);
  const host_copy second = copied_to_host(*repeat, "copy the repeat to the host");
  judged_output again = judged_from_memory(second.array, "repeat", b.problem, b.contract);
  return judge_output(b, out.view(), again.view(), o);
}

// Whether the two launches differ anywhere the host's determinism check looks (judge::finish over
// every row of a bundle's output: the whole row under a clean contract, the window otherwise),
// compared on the device.
bool launches_differ(const bundle_under_check& b, const output_array& a, const output_array& repeat) {
  std::vector<compare::device::compared_range> ranges;
  const bool clean = b.contract.mask == kernels::masking::clean;
  for (std::int64_t i = 0; i < b.problem.m; ++i) {
    const exact::window w = exact::clamped_window(b.problem, i);
    ranges.push_back({i, clean ? 0 : w.begin, clean ? b.problem.n : std::max(w.begin, w.end)});
  }
  return compare::device::differing_elements(static_cast<const float*>(a.data), static_cast<const float*>(repeat.data),
                                             a.row_stride, ranges.data(), static_cast<std::int64_t>(ranges.size())) > 0;
}

// The device's judgement, or why there is none (the output then goes to the host).
struct on_device {
  std::optional<compare::judgement> judged;
  std::string why;
};

on_device judged_on_device(const bundle_under_check& b, const output_array& a, const output_array* repeat,
                           const judge_options& o) {
  const paged::problem* paged = b.paged ? &*b.paged : nullptr;
  if (paged) return {std::nullopt, "a paged bundle"};
  if (b.contract.columns != kernels::columns_layout::absolute) return {std::nullopt, "relative columns"};
  if (a.type != output_array::element::float32 || b.contract.logits == bounds::logits_precision::bf16)
    return {std::nullopt, "bfloat16 logits (the device comparator reads float32)"};
  if (a.rows != b.problem.m || a.cols < b.problem.n || a.row_stride < a.cols)
    return {std::nullopt, "not the bundle's float32 [m, S >= n]"};  // the host's checks name what is wrong
  if (repeat != nullptr && (repeat->device != a.device || repeat->type != a.type || repeat->rows != a.rows ||
                            repeat->cols != a.cols || repeat->row_stride != a.row_stride))
    return {std::nullopt, "the repeat is not laid out as the logits on their device"};
  if (o.references == nullptr || o.topk_indices != nullptr) return {std::nullopt, "no reference store, or top-k indices"};
  if (judge::estimated_bytes(b.inputs, b.problem, paged, b.contract) > o.references->capacity())
    return {std::nullopt, "the references do not fit in the reference store"};
  std::shared_ptr<const judge::references> kept = o.references->find(&b);
  if (!kept) {
    kept = std::make_shared<const judge::references>(
        judge::judged_references(b.inputs, b.problem, paged, b.contract, o.threads, reference_engines()));
    o.references->put(&b, kept);
  }
  // The subject judge_against judges: its output is read on the device only.
  compare::subject s = compare::subject_of(b.problem, paged, b.contract, b.inputs.spec.topk,
                                           {nullptr, b.problem.m, b.problem.n, a.row_stride}, o.threads);
  s.reference = &kept->judged;
  s.centre = kept->centre_or_null();
  if (const auto why = compare::device::unsupported(s)) return {std::nullopt, *why};
  auto references = std::static_pointer_cast<const compare::device::references>(o.references->find_device(&b));
  if (!references || references->device() != a.device) {
    references = std::make_shared<const compare::device::references>(s, a.device);
    o.references->put_device(&b, references, references->bytes());
  }
  const compare::device::device_judgement d =
      compare::device::judge(s, *references, {static_cast<const float*>(a.data), a.rows, b.problem.n, a.row_stride, a.device});
  if (!d.judged) return {std::nullopt, d.findings > 0 ? fmt::format("{} elements a finding is made of", d.findings) : d.why};
  if (repeat != nullptr && b.contract.deterministic && launches_differ(b, a, *repeat))
    return {std::nullopt, "the two launches differ"};
  // What judge_against adds to the comparator's judgement of an output without findings: nothing
  // (no launch findings, the launches agree, nothing to diagnose; it sets no suspicion note).
  compare::judgement j = *d.judged;
  s.reference = nullptr;
  s.centre = nullptr;
  judge::finish(s, j, {.diagnose = false, .launch_findings = {}}, nullptr);
  return {std::move(j), {}};
}

}  // namespace

compare::judgement judge_device_output(const bundle_under_check& b, const output_array& a,
                                       const output_array* repeat, const judge_options& o, std::string* judged_on) {
  if (judged_on) judged_on->clear();
  const current_device_kept caller;
  on_device d;
  try {
    d = judged_on_device(b, a, repeat, o);
  } catch (const input_error&) {  // the bundle's, not the device's: the host would say the same
    throw;
  } catch (const std::runtime_error& e) {  // the device refused (out of memory): the host judges
    d = {std::nullopt, fmt::format("the device failed: {}", e.what())};
  }
  if (d.judged) {
    if (judged_on) *judged_on = "device";
    return *d.judged;
  }
  if (judged_on) *judged_on = "host: " + d.why;
  return judged_on_host(b, a, repeat, o);  // a device that failed for good fails this copy too
}

#else

compare::judgement judge_device_output(const bundle_under_check&, const output_array& a, const output_array*,
                                       const judge_options&, std::string*) {
  throw input_error(fmt::format("logits: a tensor on GPU {} and this build has no GPU path (configure with "
                                "-DMQA_GPU=CUDA or HIP), or move the tensors to the host with .cpu()",
                                a.device));
}

#endif

}  // namespace mqa::api
