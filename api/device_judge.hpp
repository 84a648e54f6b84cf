// Judging an output that lies in a GPU's memory (GPU builds only), shared by api::judge_device_output
// (a bundle's `check`) and the in-process suite runner (api/suite_run.hpp): the device comparator
// judges it where it sees nothing a finding is made of and the two launches agree bit for bit
// (compared on the device); anything else is copied to the host and judged there by the one judge,
// so the judgement is the same either way.
#pragma once

#ifdef MQA_HAVE_GPU

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/output.hpp"
#include "kernels/contract.hpp"
#include "reference/exact/logits.hpp"
#include "validator/compare/comparator.hpp"
#include "validator/compare/device/device_comparator.hpp"
#include "validator/compare/subject.hpp"
#include "validator/judge/judge.hpp"

namespace mqa::api::device_path {

// The calling thread's current GPU, given back when the judgement is done (the caller's framework
// keeps its own).
class current_device_kept {
 public:
  current_device_kept();
  ~current_device_kept();
  current_device_kept(const current_device_kept&) = delete;
  current_device_kept& operator=(const current_device_kept&) = delete;

 private:
  int device_;
};

// A device array brought to the host whole, laid out as it was (`array` points into `bytes`).
struct host_copy {
  // Not zeroed before the copy writes it: the copy's host threads touch its pages first, together.
  std::unique_ptr<char[]> bytes;
  output_array array;
};
host_copy copied_to_host(const output_array& a, const char* what);

// Why the output (and its repeat) is not for the device comparator under `c` (relative columns,
// bfloat16, another layout, a repeat elsewhere), before any reference is looked at; nullopt: it is.
std::optional<std::string> unsuited(const exact::problem& p, const kernels::contract& c, const output_array& a,
                                    const output_array* repeat);

struct verdict {
  std::optional<compare::judgement> judged;  // the device's, judge::finish applied
  std::string why;                           // where there is none: why the host judges
};

// The suspicion note's rows that the device comparator counts for `s` (references' `witnessed`):
// judge::witnessed_rows where the witness is the centre, else none (a CPU model's witness is
// counted on the host, from those rows copied there).
std::vector<std::int64_t> witnessed_on_device(const compare::subject& s);

// The device copy of a subject's references on a GPU: made on demand, kept by the caller.
using device_references =
    std::function<std::shared_ptr<const compare::device::references>(const compare::subject&, int device)>;

// `s`: the subject with its references set (its output is not read); `a` and `repeat` passed
// unsuited(). The suspicion note is computed as the host's judge computes it: by the device
// comparator where the references count the witness (witnessed_on_device), else from the few rows
// judge::witnessed_rows names, copied to the host. `spent`, where given, receives the wall seconds
// of the comparator (`compare`), the launches compared (`determinism`) and the witness
// (`suspicion`). Throws std::runtime_error where the device fails.
verdict judge(compare::subject s, const output_array& a, const output_array* repeat,
              const device_references& references, judge::seconds* spent = nullptr);

}  // namespace mqa::api::device_path

#endif
