// Device memory for the runner and the exact reference: grow-only buffers that survive between
// launches (a 2 GiB output is allocated once, not per launch), and the upload of a problem's
// inputs. GPU translation units only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "reference/gpu/hip_compat.hpp"
#include "reference/gpu/host_problem.hpp"
#include "reference/gpu/launch_check.hpp"

namespace mqa::gpu {

class device_buffer {
 public:
  device_buffer() = default;
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() {
    if (data_ != nullptr) (void)hipFree(data_);
  }

  // At least `bytes` (contents undefined after growth). `what` names the buffer in errors.
  void reserve(std::size_t bytes, const char* what) {
    if (bytes <= bytes_) return;
    if (data_ != nullptr) check(hipFree(data_), what);
    data_ = nullptr;
    bytes_ = 0;
    check(hipMalloc(&data_, bytes), what);
    bytes_ = bytes;
  }

  void upload(const void* src, std::size_t bytes, const char* what) {
    reserve(bytes == 0 ? 1 : bytes, what);
    if (bytes != 0) check(hipMemcpy(data_, src, bytes, hipMemcpyHostToDevice), what);
  }

  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// The six input arrays of a problem on the device.
struct device_inputs {
  device_buffer q, k, k_scale, weights, ks, ke;

  // Uploads every input (tens of MiB at most: cheaper than proving a cache still valid) and
  // returns the kernel arguments, output not yet bound.
  logits_args upload(const host_problem& p) {
    const auto m = static_cast<std::size_t>(p.m), n = static_cast<std::size_t>(p.n);
    const auto heads = static_cast<std::size_t>(p.heads), dim = static_cast<std::size_t>(p.head_dim);
    q.upload(p.q, m * heads * dim, "upload q");
    k.upload(p.k, n * dim, "upload k");
    k_scale.upload(p.k_scale, n * sizeof(float), "upload k_scale");
    weights.upload(p.weights, m * heads * sizeof(float), "upload weights");
    ks.upload(p.ks, m * sizeof(std::int32_t), "upload ks");
    ke.upload(p.ke, m * sizeof(std::int32_t), "upload ke");
    logits_args a;
    a.q = q.as<const std::uint8_t>();
    a.k = k.as<const std::uint8_t>();
    a.k_scale = k_scale.as<const float>();
    a.weights = weights.as<const float>();
    a.ks = ks.as<const std::int32_t>();
    a.ke = ke.as<const std::int32_t>();
    a.m = p.m;
    a.n = p.n;
    a.heads = p.heads;
    a.head_dim = p.head_dim;
    a.stride = p.n;
    a.q_format = p.q_format;
    a.k_format = p.k_format;
    return a;
  }
};

// The five input arrays of a paged problem on the device (the cache: gigabytes at production
// sizes, uploaded once per launch like the rest).
struct device_paged_inputs {
  device_buffer q, weights, kv_cache, block_table, context_lens;

  paged_args upload(const host_paged_problem& p) {
    const auto rows = static_cast<std::size_t>(p.rows());
    const auto heads = static_cast<std::size_t>(p.heads), dim = static_cast<std::size_t>(p.head_dim);
    q.upload(p.q, rows * heads * dim, "upload q");
    weights.upload(p.weights, rows * heads * sizeof(float), "upload weights");
    kv_cache.upload(p.kv_cache, static_cast<std::size_t>(p.num_blocks * p.page_bytes), "upload kv_cache");
    block_table.upload(p.block_table, static_cast<std::size_t>(p.batch * p.max_blocks) * sizeof(std::int32_t),
                       "upload block_table");
    context_lens.upload(p.context_lens, (p.context_lens_2d ? rows : static_cast<std::size_t>(p.batch)) * sizeof(std::int32_t),
                        "upload context_lens");
    paged_args a;
    a.q = q.as<const std::uint8_t>();
    a.weights = weights.as<const float>();
    a.kv_cache = kv_cache.as<const std::uint8_t>();
    a.block_table = block_table.as<const std::int32_t>();
    a.context_lens = context_lens.as<const std::int32_t>();
    a.batch = p.batch;
    a.next_n = p.next_n;
    a.heads = p.heads;
    a.head_dim = p.head_dim;
    a.block_kv = p.block_kv;
    a.num_blocks = p.num_blocks;
    a.page_bytes = p.page_bytes;
    a.max_blocks = p.max_blocks;
    a.max_context = p.max_context;
    a.stride = p.max_context;
    a.context_lens_2d = p.context_lens_2d;
    a.q_format = p.q_format;
    a.k_format = p.k_format;
    return a;
  }
};

}  // namespace mqa::gpu
