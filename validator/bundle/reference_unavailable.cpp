// Temporary (see validator/CMakeLists.txt): built only while reference/exact has no sources.
#include "reference.hpp"
#include "validator/input_error.hpp"

namespace mqa::bundle {

std::vector<float> exact_reference(const cases::case_spec&, const inputs::tensors&) {
  throw input_error("this build has no exact reference yet (reference/exact is not implemented), so no reference.npy");
}

}  // namespace mqa::bundle
