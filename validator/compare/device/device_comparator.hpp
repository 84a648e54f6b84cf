// The comparator with its element work on the GPU (GPU builds only): the output is read where the
// kernel wrote it, the references are kept on the device between judgements, and only per-row
// figures and the histograms come back. For an output in which the device sees nothing a finding is
// made of, the judgement is the one compare::judge gives, metric for metric and bit for bit (a
// [gpu] test holds the two judges to that on every output of the quick and nightly suites). It
// never decides a finding itself: an output with one (or anything it does not judge) is judged on
// the host, and the caller is told so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "validator/compare/comparator.hpp"
#include "validator/compare/subject.hpp"

namespace mqa::compare::device {

// The judged rows of a subject (its centre's rows, else its reference's) on the device: their
// reference, centre and magnitude, the rows' windows and figures, the keys' figures.
class references {
 public:
  // On GPU `device` (the runtime's index), which becomes the calling thread's current one.
  // `witnessed`: the suspicion note's rows where its witness is the subject's centre
  // (judge::witnessed_rows; among the judged rows), counted on the device; none where the subject
  // has no centre. Throws std::runtime_error where the device refuses (out of memory, no device),
  // std::invalid_argument for witnessed rows without a centre, or not among the centre's and the
  // reference's rows.
  references(const subject& s, int device, const std::vector<std::int64_t>& witnessed = {});
  ~references();
  references(const references&) = delete;
  references& operator=(const references&) = delete;

  std::size_t bytes() const { return bytes_; }  // of device memory held
  int device() const;
  struct state;
  const state& held() const { return *s_; }

 private:
  state* s_;
  std::size_t bytes_ = 0;
};

// Where the output lies: float32 [m, stride] on device `device` (under a bf16 contract, bfloat16
// values widened).
struct device_output {
  const float* data = nullptr;
  std::int64_t m = 0, n = 0, stride = 0;
  int device = 0;
};

// Why `s` cannot be judged on the device at all (a paged problem, a top-k kernel's indices, a
// modelled centre of sampled rows), or nullopt.
std::optional<std::string> unsupported(const subject& s);

struct device_judgement {
  // The comparator's judgement (compare::judge's), where the device judged the output; empty where
  // it saw elements a finding is made of (`findings` of them) or could not judge (`why`).
  std::optional<judgement> judged;
  std::int64_t findings = 0;
  std::string why;
  // Where the references mark witnessed rows and the kernel ran: judge::answer_copy_counts over
  // them, the centre the witness (counted whether or not the device judged the output).
  std::optional<suspicion> witness;
  // Rows whose top-k was settled from the band where a passing output's k-th largest key must lie,
  // without a selection over the whole row (the same figures either way).
  std::int64_t topk_rows_from_band = 0;
  // Wall seconds: the comparator's kernel alone, from its launch to its end (judge_rows); its
  // figures' copy to the host; the judgement made of them on the host.
  double kernel_seconds = 0, download_seconds = 0, summary_seconds = 0;
};

// How the kernel's top-k is found: first in the band where a passing output's threshold must lie
// (a selection over the whole row where that does not settle it), or always over the whole row.
enum class topk_search { band_first, whole_row };

// `s` with its output at `out` (s.output is not read) against `r`, uploaded for the same subject.
device_judgement judge(const subject& s, const references& r, const device_output& out,
                       topk_search search = topk_search::band_first);

}  // namespace mqa::compare::device
