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

std::uint64_t generate_bundle(const cases::case_spec& c, std::string_view suite_name, bundle_writer& writer,
                              const operation::engines& engines) {
  cases::case_spec spec = c;
  const inputs::tensors t = inputs::generate(c);
  if (!spec.topk) spec.topk = layout::default_topk({t.ks, t.ke}, c.n);
  writer.write(spec, suite_name, t, [&](std::int64_t first, std::int64_t count, std::span<float> out) {
    exact_reference_rows(spec, t, first, count, out, engines);
  });
  return inputs::fingerprint(t);
}

}  // namespace mqa::bundle
