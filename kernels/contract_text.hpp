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

// What `run --kernel` appends to the line when no --mask was given: each case's clean_logits then
// decides, and a case with clean_logits = false is judged dont-care.
inline constexpr std::string_view kMaskFromCasesNote = " (masking: clean unless a case sets clean_logits = false)";

// A contract line as a report holds it.
struct contract_line {
  contract declared;
  bool mask_from_cases = false;  // the line ended with kMaskFromCasesNote (declared.mask is clean)
};

// The contract describe() wrote as `line`, with kMaskFromCasesNote or without; nullopt for anything
// else.
std::optional<contract_line> parse_contract(std::string_view line);

}  // namespace mqa::kernels
