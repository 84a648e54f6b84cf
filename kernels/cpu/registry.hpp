// The CPU variants: arithmetic models that must pass under their own contracts, and mutants
// that must be caught with the finding class their planted bug produces.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kernels/cpu/model.hpp"
#include "kernels/variant.hpp"

namespace mqa::kernels::cpu {

// A correct arithmetic model: the configuration of the CPU loop that a kernel declaring `declared`
// may be, bit for bit. The diagnosis (validator/diagnose) plants bugs into these.
struct arithmetic_model {
  std::string name, description;
  contract declared;
  model_config config;
  std::function<std::optional<std::string>(const exact::problem&)> refuses = {};  // as variant::refuses
};

std::vector<arithmetic_model> arithmetic_models();

// The configurations of the models a kernel declaring `c` may be on `p` (same dot and head
// accumulators, k_scale placement, weights, promotion interval and relu rule; the problem taken),
// in the table's order; empty where none declares it.
std::vector<model_config> models_declaring(const contract& c, const exact::problem& p);

// The exact engine as a variant, every arithmetic model, then the mutants.
std::vector<variant> cpu_variants();

}  // namespace mqa::kernels::cpu
