#include "reference_engine.hpp"

#include "reference/paged/exact.hpp"

#ifdef MQA_HAVE_GPU
#include "kernels/gpu/runner.hpp"
#include "reference/exact/gpu/exact_logits.hpp"
#endif

namespace mqa::api {

#ifdef MQA_HAVE_GPU
namespace {

// The GPU reference rounds to float32 only: bf16 logits and block scales take the CPU engine.
bool on_gpu(const exact::problem& p, const exact::options& o) {
  static const bool gpu = gpu::probe_device().usable;
  return gpu && !o.bf16_logits && p.q_block_scale.empty() && p.k_block_scale.empty();
}

}  // namespace
#endif

exact::result exact_reference(const exact::problem& p, const exact::options& o) {
#ifdef MQA_HAVE_GPU
  if (on_gpu(p, o)) return gpu::exact_logits(p, gpu::exact_gpu_options{.reference = o});
#endif
  return exact::compute(p, o);
}

bool on_device(const exact::problem& p, const exact::options& o) {
#ifdef MQA_HAVE_GPU
  return on_gpu(p, o) && gpu::computes_on_device(p, o);
#else
  (void)p, (void)o;
  return false;
#endif
}

bool paged_on_device(const paged::problem& p, const exact::options& o) {
#ifdef MQA_HAVE_GPU
  // paged_exact_reference gives exact_reference each request's dense problem (its rows, its keys
  // gathered), all with o and the paged problem's formats, heads and head_dim, block scales where
  // the formats use them. Whether the GPU computes one depends on nothing else (on_gpu, and
  // gpu::computes_on_device, which reads sizes only to find them inconsistent): a problem of no
  // rows and no keys with those stands for every request.
  if (exact::uses_block_scales(p.q_format) || exact::uses_block_scales(p.k_format)) return false;
  exact::problem none;
  none.heads = p.heads;
  none.head_dim = p.head_dim;
  none.q_format = p.q_format;
  none.k_format = p.k_format;
  return on_device(none, o);
#else
  (void)p, (void)o;
  return false;
#endif
}

exact::result paged_exact_reference(const paged::problem& p, const exact::options& o) {
#ifdef MQA_HAVE_GPU
  static const bool gpu = gpu::probe_device().usable;
  if (gpu) return paged::compute(p, o, exact_reference);
#endif
  return paged::compute(p, o);
}

}  // namespace mqa::api
