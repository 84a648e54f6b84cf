#include "bundle.hpp"
#include "reference.hpp"
#include "validator/layout/layout.hpp"

namespace mqa::bundle {

bundle make_bundle(const cases::case_spec& c, std::string_view suite_name) {
  bundle b;
  b.suite_name = suite_name;
  b.spec = c;
  b.inputs = inputs::generate(c);
  if (!b.spec.topk) b.spec.topk = layout::default_topk({b.inputs.ks, b.inputs.ke}, c.n);
  b.reference = exact_reference(b.spec, b.inputs);
  return b;
}

}  // namespace mqa::bundle
