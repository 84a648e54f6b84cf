#include "registry.hpp"

#include <algorithm>

#include "kernels/cpu/registry.hpp"
#ifdef MQA_HAVE_GPU
#include "kernels/hip/registry.hpp"
#endif

namespace mqa::kernels {

const std::vector<variant>& all_variants() {
  static const std::vector<variant> variants = [] {
    std::vector<variant> v = cpu::cpu_variants();
#ifdef MQA_HAVE_GPU
    for (auto& g : gpu_variants()) v.push_back(std::move(g));
#endif
    return v;
  }();
  return variants;
}

const variant* find_variant(std::string_view name) {
  const auto& all = all_variants();
  const auto it = std::find_if(all.begin(), all.end(), [&](const variant& v) { return v.name == name; });
  return it == all.end() ? nullptr : &*it;
}

}  // namespace mqa::kernels
