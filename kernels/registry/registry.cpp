#include "registry.hpp"

#include <algorithm>
#include <array>

#include "kernels/cpu/registry.hpp"
#ifdef MQA_HAVE_GPU
#include "kernels/gpu/registry.hpp"
#include "kernels/gpu/runner.hpp"
#endif

namespace mqa::kernels {

const std::vector<variant>& all_variants() {
  static const std::vector<variant> variants = [] {
    std::vector<variant> v = cpu::cpu_variants();
#ifdef MQA_HAVE_GPU
    // Only where they can run: a GPU build on a machine without a usable device (CI compiles the
    // CUDA path wherever nvcc is installed) must not fail every suite that runs all variants.
    if (gpu::probe_device().usable)
      for (auto& g : gpu_variants()) v.push_back(std::move(g));
#endif
    return v;
  }();
  return variants;
}

namespace {
// kernels/gpu/registry.cpp registers these (a GPU-build test checks the two lists agree).
constexpr std::array<std::string_view, 14> kGpuVariantNames{
    "hip-naive",          "hip-tiled",      "hip-mfma-gfx942",        "hip-naive-end-inclusive",
    "hip-tiled-offset32", "hip-tiled-tail", "hip-tiled-race",         "hip-tiled-atomic-order",
    "hip-tiled-row-overrun", "cuda-wgmma",  "cuda-wgmma-tail",        "hip-paged-naive",
    "hip-paged-tiled",    "hip-paged-tiled-offset32"};
}  // namespace

bool is_gpu_variant_name(std::string_view name) {
  return std::find(kGpuVariantNames.begin(), kGpuVariantNames.end(), name) != kGpuVariantNames.end();
}

std::string why_no_gpu() {
#ifdef MQA_HAVE_GPU
  const gpu::device_info d = gpu::probe_device();
  return d.usable ? "" : "no usable GPU here: " + d.description;
#else
  return "this build has no GPU kernels (configure with -DMQA_GPU=CUDA or HIP on a machine with the toolchain)";
#endif
}

std::optional<std::string> gpu_in_use() {
#ifdef MQA_HAVE_GPU
  const gpu::device_info d = gpu::probe_device();
  if (d.usable) return d.description;
#endif
  return std::nullopt;
}

const variant* find_variant(std::string_view name) {
  const auto& all = all_variants();
  const auto it = std::find_if(all.begin(), all.end(), [&](const variant& v) { return v.name == name; });
  return it == all.end() ? nullptr : &*it;
}

}  // namespace mqa::kernels
