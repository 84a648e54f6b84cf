#include "certificate.hpp"

#include <fmt/core.h>

#include <algorithm>

#include "build_info.hpp"
#include "diff_text.hpp"
#include "fields.hpp"
#include "report.hpp"

namespace mqa::reports {
namespace {

using json = nlohmann::json;
using verdict::report_diff;

// The broken expectation a regression is about, as report.json words it: the same pair failing
// or unjudged, the same mutant blind. Empty when the regression stands alone.
std::string broken_sentence_of(const verdict::regression& g, const json& report) {
  if (!g.case_name.empty() && !g.variant.empty()) {
    for (const auto& x : report.at("results"))
      if (x.at("case") == g.case_name && x.at("variant") == g.variant) {
        if (const auto e = x.find("error"); e != x.end() && e->is_string() && !e->get_ref<const std::string&>().empty())
          return verdict::unjudged_sentence(g.variant, g.case_name, e->get_ref<const std::string&>());
        return verdict::failing_model_sentence(g.variant, g.case_name);
      }
  } else if (g.case_name.empty() && g.kind == "mutant-blind") {
    for (const auto& m : report.at("mutants"))
      if (m.at("variant") == g.variant) return verdict::blind_mutant_sentence(g.variant, m.at("bug_class").get<std::string>());
  }
  return "";
}

// One reason per failure: a broken expectation, with the regressions about the same pair or
// mutant said on its line; then the regressions that break no expectation.
std::vector<std::string> reasons_of(const json& report, const report_diff& d) {
  const auto& broken = report.at("broken_expectations");
  std::vector<std::string> reasons, also(broken.size());
  std::vector<std::string> alone;
  for (const auto& g : d.regressions) {
    const std::string sentence = broken_sentence_of(g, report);
    const auto at = std::find(broken.begin(), broken.end(), json(sentence));
    if (sentence.empty() || at == broken.end())
      alone.push_back(fmt::format("regressed ({}): {}", g.kind, g.text));
    else
      also[static_cast<std::size_t>(at - broken.begin())] += fmt::format("; regressed ({})", g.kind);
  }
  for (std::size_t i = 0; i < broken.size(); ++i)
    reasons.push_back("expectation broken: " + broken[i].get<std::string>() + also[i]);
  reasons.insert(reasons.end(), alone.begin(), alone.end());
  return reasons;
}

// Each result that broke its expectation, with its first finding (detail and diagnosis) or error:
// what to look at first, without opening the report.
json failures_of(const json& report) {
  json failures = json::array();
  for (const auto& x : report.at("results")) {
    const std::string outcome = x.at("outcome").get<std::string>();
    if (outcome != "FAIL" && outcome != "error") continue;
    failures.push_back({{"case", x.at("case")}, {"variant", x.at("variant")}, {"outcome", outcome},
                        {"first_finding", first_finding(x)}});
  }
  return failures;
}

}  // namespace

json certificate_json(const certificate_input& in) {
  const json& r = *in.report;
  const report_diff& d = *in.diff;
  std::vector<std::string> reasons = reasons_of(r, d);
  // A suspicious output is right in its values but not evidence of the declared arithmetic: a
  // certificate that stood on it would certify whatever produced the answer.
  for (const auto& x : r.at("results"))
    if (const auto s = x.find("suspicion"); s != x.end() && s->is_object())
      reasons.push_back(fmt::format("case '{}', {}: {}", x.at("case").get<std::string>(),
                                    x.at("variant").get<std::string>(), s->at("note").get<std::string>()));
  const bool certified = reasons.empty();
  // A weaker contract certified on purpose (--accept-weaker-contract): said, never silent.
  std::vector<std::string> accepted;
  for (const auto& a : d.accepted) accepted.push_back(a.text);

  json subject{{"variants", r.at("variants")}, {"kernel", nullptr}};
  if (const auto k = r.find("kernel"); k != r.end() && k->is_object()) {
    json kernel{{"command", k->at("command")}, {"label", k->at("label")}, {"contract", k->at("contract")}};
    kernel["version"] = k->contains("version") ? k->at("version") : json(nullptr);
    subject["kernel"] = kernel;
  }
  json verdicts = json::array();
  for (const auto& x : r.at("results"))
    verdicts.push_back({{"case", x.at("case")},
                        {"variant", x.at("variant")},
                        {"kind", x.at("kind")},
                        {"outcome", x.at("outcome")},
                        {"findings", findings_summary(x)},
                        {"suspicion", x.contains("suspicion") ? x.at("suspicion") : json(nullptr)}});
  const build_info build = this_build();
  return {{"schema", "mqacheck.certificate"},
          {"schema_version", 1},
          {"certified", certified},
          {"reasons", reasons},
          {"failures", failures_of(r)},
          {"accepted_weaker_contract", accepted},
          {"accepted_dirty_baseline", in.accepted_dirty_baseline ? json(*in.accepted_dirty_baseline) : json(nullptr)},
          {"issued", in.issued},
          {"subject", subject},
          {"suite", {{"name", r.at("suite")}, {"file", r.at("file")}, {"cases", r.at("cases")}}},
          {"mqacheck", {{"version", build.version}, {"commit", build.commit}}},
          {"machine",
           {{"system", in.host.system},
            {"cpu", in.host.cpu},
            {"cores", in.host.cores},
            {"gpu", in.host.gpu ? json(*in.host.gpu) : json(nullptr)}}},
          {"expectations_hold", r.at("expectations_hold")},
          {"broken_expectations", r.at("broken_expectations")},
          {"skipped", r.at("skipped")},
          {"verdicts", verdicts},
          {"mutants", r.at("mutants")},
          {"diff", diff_json(d)}};
}

std::string certificate_markdown(const json& c, const report_diff& diff) {
  const bool certified = c.at("certified").get<bool>();
  std::string md = fmt::format("# mqacheck certificate: {}\n\n", certified ? "CERTIFIED" : "NOT CERTIFIED");
  // A reason quotes what it judged (an adapter's error, a case's name): escaped like every other text.
  for (const auto& why : c.at("reasons")) md += fmt::format("- **{}**\n", markdown_text(why.get<std::string>()));
  for (const auto& a : c.at("accepted_weaker_contract"))
    md += fmt::format("- accepted a weaker contract (--accept-weaker-contract): {}\n", markdown_text(a.get<std::string>()));
  const bool dirty = c.at("accepted_dirty_baseline").is_string();
  if (dirty)
    md += fmt::format("- accepted a baseline that cannot be rebuilt (--accept-dirty-baseline): it was {}\n",
                      markdown_text(c.at("accepted_dirty_baseline").get<std::string>()));
  if (!c.at("reasons").empty() || !c.at("accepted_weaker_contract").empty() || dirty) md += "\n";

  const json& subject = c.at("subject");
  // Markdown already: the label, version and command are escaped (escape.hpp), never in code spans.
  std::string what;
  if (subject.at("kernel").is_object()) {
    const json& k = subject.at("kernel");
    what = fmt::format("kernel {}{} run by {}",
                       markdown_text(k.at("label").is_string() ? k.at("label").get<std::string>() : "kernel"),
                       k.at("version").is_string() ? " version " + markdown_text(k.at("version").get<std::string>()) : "",
                       markdown_text(k.at("command").get<std::string>()));
  } else {
    what = fmt::format("{} built-in variants", subject.at("variants").size());
  }
  const json& suite = c.at("suite");
  const json& host = c.at("machine");
  const json& base = c.at("diff").at("baseline");
  md += "| | |\n|---|---|\n";
  md += fmt::format("| certified | {} |\n", what);
  md += fmt::format("| suite | {} ({}), {} cases |\n", markdown_text(suite.at("name").get<std::string>()),
                    markdown_text(suite.at("file").get<std::string>()), suite.at("cases").size());
  md += fmt::format("| baseline | {} (mqacheck {} {}) |\n", markdown_text(base.at("path").get<std::string>()),
                    markdown_text(base.at("mqacheck").at("version").get<std::string>()),
                    markdown_text(base.at("mqacheck").at("commit").get<std::string>()));
  md += fmt::format("| mqacheck | {} ({}) |\n", c.at("mqacheck").at("version").get<std::string>(),
                    c.at("mqacheck").at("commit").get<std::string>());
  md +=
      fmt::format("| machine | {}; CPU {} ({} cores); GPU {} |\n", markdown_text(host.at("system").get<std::string>()),
                  markdown_text(host.at("cpu").get<std::string>()), host.at("cores").get<unsigned>(),
                  host.at("gpu").is_string() ? markdown_text(host.at("gpu").get<std::string>()) : "none");
  md += fmt::format("| issued | {} |\n\n", c.at("issued").get<std::string>());

  md += "## Contracts declared\n\n| variant | kind | contract |\n|---|---|---|\n";
  if (subject.at("kernel").is_object())
    md += fmt::format("| {} | kernel | {} |\n", what,
                      markdown_text(subject.at("kernel").at("contract").get<std::string>()));
  else
    for (const auto& v : subject.at("variants"))
      md += fmt::format("| {} | {} | {} |\n", markdown_text(v.at("variant").get<std::string>()),
                        v.at("kind").get<std::string>(), markdown_text(v.at("contract").get<std::string>()));

  md += "\n## Suite and inputs\n\n| case | inputs fingerprint | m | n | heads | head_dim |\n|---|---|---:|---:|---:|---:|\n";
  for (const auto& k : suite.at("cases"))
    md += fmt::format("| {} | `{}` | {} | {} | {} | {} |\n", markdown_text(k.at("case").get<std::string>()),
                      k.at("inputs_fingerprint").is_string() ? k.at("inputs_fingerprint").get<std::string>() : "-",
                      k.at("m").dump(), k.at("n").dump(), k.at("heads").dump(), k.at("head_dim").dump());

  md += fmt::format("\n## Verdict per case\n\n{}\n\n| case | variant | outcome | findings |\n|---|---|---|---|\n",
                    c.at("expectations_hold").get<bool>() ? "Every expectation of the run holds."
                                                          : "**Expectations broken** (listed above).");
  for (const auto& v : c.at("verdicts"))
    md += fmt::format("| {} | {} | {} | {} |\n", markdown_text(v.at("case").get<std::string>()),
                      markdown_text(v.at("variant").get<std::string>()), v.at("outcome").get<std::string>(),
                      markdown_text(v.at("findings").get<std::string>()));
  for (const auto& s : c.at("skipped"))
    md += fmt::format("| {} | {} | skipped | {} |\n", markdown_text(s.at("case").get<std::string>()),
                      markdown_text(s.at("variant").get<std::string>()),
                      markdown_text(s.at("reason").get<std::string>()));

  return md + "\n" + diff_markdown(diff);  // "## mqacheck diff: ...", a section of the certificate
}

}  // namespace mqa::reports
