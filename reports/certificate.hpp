// certificate.json and certificate.md of `mqacheck certify`: what was certified (an
// external kernel's command, label and version, or the built-in variants, each with the contract
// it declared), on which suite (its file and every case's inputs fingerprint), by which mqacheck
// (version and commit), on which machine, when; the verdict per case and variant, and the diff
// against the baseline. CERTIFIED when every expectation of the run holds and the diff does not
// regress (validator/verdict/diff.hpp); the reasons otherwise, one per failure (a broken
// expectation carries the regressions about the same pair or mutant), with each failing result's
// first finding. A weaker contract accepted (--accept-weaker-contract) is recorded, and so is a
// baseline made by an mqacheck of uncommitted changes (--accept-dirty-baseline). Made from the
// run's report.json and the diff alone.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "validator/verdict/diff.hpp"

namespace mqa::reports {

struct machine {
  std::string system;  // "Linux 6.1.0-18-amd64 x86_64"
  std::string cpu;     // "AMD EPYC 9654 96-Core Processor", or "unknown"
  unsigned cores = 0;
  std::optional<std::string> gpu;  // the GPU the GPU variants ran on, if any
};

struct certificate_input {
  const nlohmann::json* report = nullptr;  // the run's report.json (check_report)
  const verdict::report_diff* diff = nullptr;  // against the baseline
  machine host;
  std::string issued;  // UTC, ISO 8601
  // Set when the baseline's mqacheck cannot be rebuilt and --accept-dirty-baseline took it anyway:
  // why (verdict::unreproducible_build), recorded as "accepted_dirty_baseline".
  std::optional<std::string> accepted_dirty_baseline = std::nullopt;
};

nlohmann::json certificate_json(const certificate_input& in);  // schema "mqacheck.certificate", version 1
// The certificate for people; the diff section is diff_markdown of the same diff.
std::string certificate_markdown(const nlohmann::json& certificate, const verdict::report_diff& diff);

}  // namespace mqa::reports
