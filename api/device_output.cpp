#include <sys/mman.h>

#include <fmt/core.h>

#include <cstring>

#include "api/check.hpp"
#include "api/reference_engine.hpp"
#include "validator/input_error.hpp"
#include "validator/judge/bundle.hpp"
#include "validator/judge/judge.hpp"
#include "validator/judge/suspicion.hpp"

#ifdef MQA_HAVE_GPU
#include "validator/compare/device/device_comparator.hpp"
#include "validator/compare/device/judge_args.hpp"
#endif

namespace mqa::api {

#ifdef MQA_HAVE_GPU
namespace {

std::size_t element_bytes(const output_array& a) { return a.type == output_array::element::bfloat16 ? 2 : 4; }

// Host memory the shape of the device output that holds only the rows brought to it: reserved, not
// committed (rows never copied are never touched), and unmapped with its owner.
class host_rows {
 public:
  explicit host_rows(std::size_t bytes) : bytes_(bytes == 0 ? 1 : bytes) {
    data_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (data_ == MAP_FAILED) throw std::runtime_error(fmt::format("mmap of {} bytes for the output's rows failed", bytes_));
  }
  ~host_rows() { munmap(data_, bytes_); }
  host_rows(const host_rows&) = delete;
  host_rows& operator=(const host_rows&) = delete;
  char* data() const { return static_cast<char*>(data_); }

 private:
  void* data_;
  std::size_t bytes_;
};

// `rows` of the device array copied into `into` (laid out as the array), row by row.
void bring_rows(const output_array& a, const std::vector<std::int64_t>& rows, char* into) {
  const std::size_t row_bytes = static_cast<std::size_t>(a.row_stride) * element_bytes(a);
  const std::size_t used = static_cast<std::size_t>(a.cols) * element_bytes(a);
  for (const std::int64_t i : rows)
    compare::device::copy_from_device(into + static_cast<std::size_t>(i) * row_bytes,
                                      static_cast<const char*>(a.data) + static_cast<std::size_t>(i) * row_bytes, used,
                                      "copy an output row to the host");
}

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

// Whether the two launches differ anywhere compare::compare_runs looks (the judged rows; the whole
// row under a clean contract, the window otherwise), compared on the device.
bool launches_differ(const compare::subject& s, const output_array& a, const output_array& repeat) {
  std::vector<compare::device::compared_range> ranges;
  for (const std::int64_t i : s.reference->rows) {
    const exact::window w = exact::clamped_window(*s.problem, i);
    const bool clean = s.contract.mask == kernels::masking::clean;
    ranges.push_back({i, clean ? 0 : w.begin, clean ? a.cols : std::max(w.begin, w.end)});
  }
  const auto d = compare::device::compare_launches(static_cast<const float*>(a.data), static_cast<const float*>(repeat.data),
                                                   a.row_stride, ranges.data(), static_cast<std::int64_t>(ranges.size()));
  return d.count > 0;
}

}  // namespace

compare::judgement judge_device_output(const bundle_under_check& b, const output_array& a,
                                       const output_array* repeat, const judge_options& o, std::string* judged_on) {
  auto host = [&](std::string why) {
    if (judged_on) *judged_on = "host: " + why;
    return judged_on_host(b, a, repeat, o);
  };
  if (repeat != nullptr && (repeat->device != a.device || repeat->type != a.type || repeat->rows != a.rows ||
                            repeat->cols != a.cols || repeat->row_stride != a.row_stride))
    return host("the repeat is not laid out as the logits on their device");
  const paged::problem* paged = b.paged ? &*b.paged : nullptr;
  const bool bf16 = b.contract.logits == bounds::logits_precision::bf16;
  if (paged) return host("a paged bundle");
  if (b.contract.columns != kernels::columns_layout::absolute) return host("relative columns");
  if (a.type != output_array::element::float32) return host("bfloat16 storage (the device comparator reads float32)");
  if (a.rows != b.problem.m || a.cols != b.problem.n || bf16)
    return host("not the bundle's float32 [m, n]");  // the host's checks name what is wrong
  if (o.references == nullptr || o.topk_indices != nullptr) return host("no reference store, or top-k indices");
  if (judge::estimated_bytes(b.inputs, b.problem, paged, b.contract) > o.references->capacity())
    return host("the references do not fit in the reference store");
  std::shared_ptr<const judge::references> kept = o.references->find(&b);
  if (!kept) {
    kept = std::make_shared<const judge::references>(
        judge::judged_references(b.inputs, b.problem, paged, b.contract, o.threads, reference_engines()));
    o.references->put(&b, kept);
  }
  compare::subject s = compare::subject_of(b.problem, paged, b.contract, b.inputs.spec.topk,
                                           {nullptr, b.problem.m, b.problem.n, a.row_stride}, o.threads);
  s.reference = &kept->judged;
  s.centre = kept->centre_or_null();
  if (const auto why = compare::device::unsupported(s)) return host(*why);
  compare::device::use_device(a.device);
  auto on_device = std::static_pointer_cast<const compare::device::references>(o.references->find_device(&b));
  if (!on_device) {
    on_device = std::make_shared<const compare::device::references>(s);
    o.references->put_device(&b, on_device, on_device->bytes());
  }
  const compare::device::device_judgement d =
      compare::device::judge(s, *on_device, {static_cast<const float*>(a.data), a.rows, a.cols, a.row_stride, a.device});
  if (!d.judged)
    return host(d.findings > 0 ? fmt::format("{} elements a finding is made of", d.findings) : d.why);
  if (repeat != nullptr && b.contract.deterministic && launches_differ(s, a, *repeat))
    return host("the two launches differ");
  compare::judgement j = *d.judged;
  // What the rest of the judge reads of the output (the suspicion's witness rows) is brought over.
  const std::vector<std::int64_t> rows = judge::witness_rows(s);
  std::optional<host_rows> mirror;
  if (!rows.empty()) {
    mirror.emplace(static_cast<std::size_t>(a.rows * a.row_stride) * element_bytes(a));
    bring_rows(a, rows, mirror->data());
    s.output = {reinterpret_cast<float*>(mirror->data()), a.rows, a.cols, a.row_stride};
  }
  judge::finish(s, j, {.diagnose = false, .launch_findings = {}}, nullptr);
  if (judged_on) *judged_on = "device";
  return j;
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
