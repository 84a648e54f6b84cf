#include <catch2/catch.hpp>

#include <set>

#include "kernels/registry/registry.hpp"
#ifdef MQA_HAVE_GPU
#include "kernels/gpu/registry.hpp"
#endif

using namespace mqa::kernels;

TEST_CASE("variant names are unique and the GPU names are known to every build", "[kernels]") {
  std::set<std::string> names;
  for (const auto& v : all_variants()) CHECK(names.insert(v.name).second);
  CHECK(find_variant("fp32-naive") != nullptr);
  CHECK(find_variant("fp32-naiive") == nullptr);
  CHECK(is_gpu_variant_name("hip-tiled"));
  CHECK_FALSE(is_gpu_variant_name("fp32-naive"));
#ifdef MQA_HAVE_GPU
  // Listing the GPU variants needs no device: the names kernels/registry/registry.cpp knows must be theirs.
  for (const auto& v : gpu_variants()) {
    CAPTURE(v.name);
    CHECK(is_gpu_variant_name(v.name));
  }
#else
  CHECK_FALSE(why_no_gpu().empty());
#endif
}
