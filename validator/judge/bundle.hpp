// Judging an output against a bundle (`check`, `shrink`): the references are computed from the
// bundle's inputs and checked against its stored reference.npy, which must be the keeps-NaN
// reference of those inputs (cases/README.md); a bundle that was modified or mixed up is an
// input_error naming it.
#pragma once

#include <optional>
#include <string>

#include "kernels/contract.hpp"
#include "reference/exact/logits.hpp"
#include "reference/paged/problem.hpp"
#include "validator/bundle/bundle.hpp"
#include "validator/compare/comparator.hpp"
#include "validator/judge/references.hpp"

namespace mqa::judge {

// What computing a bundle's references took, in wall seconds: reference.npy's rows read, their
// proof (where no digest proves them: the keeps-NaN reference computed and compared with them,
// which is also the judged reference under the keeps-NaN relu rule, and where the GPU computes the
// references whole, under either rule unless a NaN or Inf code can tell the rules apart), the
// judged reference with its magnitudes (where the proof's is not it), a modelled contract's
// centre. A step not taken is 0.
// Where the GPU computes the references whole, reference.npy is read while it computes: the read's
// time then overlaps the exact reference's.
struct reference_seconds {
  double read = 0, proof = 0, reference = 0, centre = 0;
  double gather = 0;  // judged_references: each block's rows appended to the whole references
};

struct references {
  exact::result judged;                 // with the contract's relu rule
  std::optional<exact::result> centre;  // a modelled contract's (centre_for)
  reference_seconds spent;              // judged_references': what computing them took
  const exact::result* centre_or_null() const { return centre ? &*centre : nullptr; }
};

// The whole references of a bundle held in memory (bundle::load_bundle), reference.npy checked
// against them. A paged bundle is computed from its cache (`paged`; `p` is then its rows).
references references_for(const bundle::bundle& b, const exact::problem& p, const paged::problem* paged,
                          const kernels::contract& c, unsigned threads, const std::string& bundle_dir,
                          const engines& e = {});

// The same judgement as references_for then judge(), of a bundle read by bundle::load_bundle_inputs,
// without ever holding its whole reference: the output is judged in blocks of rows, each block's
// reference.npy rows read and checked (-inf outside the windows), and the reference, its magnitude
// and a modelled contract's centre computed for that block only (the centre's rows chosen once over
// the whole output: centre_rows). Where the bundle's digest proves reference.npy (`b.trusted`), its
// values are taken as they are and only the magnitude (and the elements a non-finite input touches
// under --relu fmax) is computed; else the keeps-NaN reference of each block is computed and
// compared with it. A paged bundle is judged the same way (its reference computed from the cache;
// no stored values reused). The diagnosis then computes the rows it samples (diagnose::rows_needed)
// again.
compare::judgement judge_in_blocks(const bundle::bundle_inputs& b, const exact::problem& p, const paged::problem* paged,
                                   const kernels::contract& c, kernels::output_view output,
                                   std::optional<kernels::output_view> repeat, bool diagnose, unsigned threads,
                                   const engines& e = {}, const kernels::indices_view* indices = nullptr,
                                   kernels::topk_convention topk_convention = {});

// The references judge_in_blocks computes, block by block as it does (reference.npy read, proven or
// checked), gathered whole: for an output judged again and again against one bundle (the Python
// extension keeps them). A modelled contract on a proven prefill bundle holds its judged rows only
// (every row where the engines compute the centre on a GPU, else the CPU's sampled rows). Where the
// engines compute a prefill bundle's reference on a GPU (engines::on_device) and every row is
// judged, each reference comes from one call over every row instead, with the same bits.
references judged_references(const bundle::bundle_inputs& b, const exact::problem& p, const paged::problem* paged,
                             const kernels::contract& c, unsigned threads, const engines& e = {});

// judge_in_blocks's judgement, bit for bit, of an output against references judged_references gave
// for the same bundle and contract: the comparator over them, the determinism check and the
// diagnosis (which computes the few rows it samples, as judge_in_blocks does).
compare::judgement judge_against(const references& r, const bundle::bundle_inputs& b, const exact::problem& p,
                                 const paged::problem* paged, const kernels::contract& c, kernels::output_view output,
                                 std::optional<kernels::output_view> repeat, bool diagnose, unsigned threads,
                                 const engines& e = {}, const kernels::indices_view* indices = nullptr,
                                 kernels::topk_convention topk_convention = {});

// What judged_references holds, in bytes; and an upper bound of it known before computing them.
std::size_t bytes_of(const references& r);
std::size_t estimated_bytes(const bundle::bundle_inputs& b, const exact::problem& p, const paged::problem* paged,
                            const kernels::contract& c, const engines& e = {});

}  // namespace mqa::judge
