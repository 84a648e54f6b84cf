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

// The whole output brought to the host and judged there.
compare::judgement judged_on_host(const bundle_under_check& b, const output_array& a, const judge_options& o) {
  const std::size_t bytes =
      static_cast<std::size_t>(std::max<std::int64_t>(a.rows - 1, 0) * a.row_stride + a.cols) * element_bytes(a);
  std::vector<char> host(a.rows > 0 ? bytes : 0);
  compare::device::use_device(a.device);
  compare::device::copy_from_device(host.data(), a.data, host.size(), "copy the output to the host");
  output_array on_host = a;
  on_host.data = host.data();
  on_host.device = -1;
  judged_output out = judged_from_memory(on_host, "logits", b.problem, b.contract);
  return judge_output(b, out.view(), std::nullopt, o);
}

}  // namespace

compare::judgement judge_device_output(const bundle_under_check& b, const output_array& a, const judge_options& o,
                                       std::string* judged_on) {
  auto host = [&](std::string why) {
    if (judged_on) *judged_on = "host: " + why;
    return judged_on_host(b, a, o);
  };
  const paged::problem* paged = b.paged ? &*b.paged : nullptr;
  const bool bf16 = b.contract.logits == bounds::logits_precision::bf16;
  if (paged) return host("a paged bundle");
  if (b.contract.columns != kernels::columns_layout::absolute) return host("relative columns");
  if (a.rows != b.problem.m || a.cols != b.problem.n || (a.type == output_array::element::bfloat16) != bf16)
    return host("not the bundle's [m, n] in its contract's dtype");  // the host's checks name what
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
      compare::device::judge(s, *on_device, {a.data, a.rows, a.cols, a.row_stride, bf16, a.device});
  if (!d.judged)
    return host(d.findings > 0 ? fmt::format("{} elements a finding is made of", d.findings) : d.why);
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

compare::judgement judge_device_output(const bundle_under_check&, const output_array& a, const judge_options&,
                                       std::string*) {
  throw input_error(fmt::format("logits: a tensor on GPU {} and this build has no GPU path (configure with "
                                "-DMQA_GPU=CUDA or HIP), or move it to the host with .cpu()",
                                a.device));
}

#endif

}  // namespace mqa::api
