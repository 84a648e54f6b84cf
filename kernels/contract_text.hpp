// The contract line describe() writes ("dot fp32, heads fp32, k_scale after-head-sum, weights fp32,
// relu keeps NaN, clean, deterministic"), read back: reports keep a variant's or a kernel's contract
// as that line alone, and comparing two reports' contracts (validator/verdict/contract_change.hpp)
// needs the record. Every spelling is read from the tables that wrote it (reference/names).
// q_format and k_format are not in the line and stay nullopt.
#pragma once

#include <optional>
#include <string_view>

#include "kernels/contract.hpp"

namespace mqa::kernels {

// The contract describe() wrote as `line`; nullopt for anything describe() does not write.
std::optional<contract> parse_contract(std::string_view line);

}  // namespace mqa::kernels
