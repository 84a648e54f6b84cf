#include "formats.hpp"

#include <iterator>

#include "html.hpp"
#include "junit.hpp"
#include "markdown.hpp"
#include "report.hpp"
#include "validator/verdict/report_document.hpp"

namespace mqa::reports {
namespace {

constexpr report_format kFormats[] = {
    {verdict::kReportFile, report_json_text, "the whole result, schema mqacheck.report: what diff, merge and certify read", ""},
    {"report.xml", junit_xml, "JUnit XML for CI test views: one testcase per case x variant and per mutant", "JUnit"},
    {"summary.md", markdown, "Markdown tables for $GITHUB_STEP_SUMMARY or a pull-request comment", ""},
    {"report.html", html, "one self-contained page with the figures: histograms and heat maps per result", ""},
};
constexpr std::size_t kCount = std::size(kFormats);

// The order files are put in place: every other format in registry order, report.json last.
std::vector<const report_format*> put_in_place_order() {
  std::vector<const report_format*> out;
  for (std::size_t f = 1; f < kCount; ++f) out.push_back(&kFormats[f]);
  out.push_back(&kFormats[0]);
  return out;
}

}  // namespace

std::span<const report_format> report_formats() { return kFormats; }

std::vector<report_file> report_files(const nlohmann::json& report) {
  std::vector<report_file> out;
  for (const report_format* f : put_in_place_order()) out.push_back({std::string(f->file), f->write(report)});
  return out;
}

std::vector<std::string> report_file_names() {
  std::vector<std::string> out;
  for (const report_format* f : put_in_place_order()) out.emplace_back(f->file);
  return out;
}

std::string report_file_list(bool with_notes) {
  std::string out;
  for (std::size_t f = 0; f < kCount; ++f) {
    out += f == 0 ? "" : f + 1 == kCount ? " and " : ", ";
    out += kFormats[f].file;
    if (with_notes && !kFormats[f].help_note.empty()) out += " (" + std::string(kFormats[f].help_note) + ")";
  }
  return out;
}

void write_report_files(io::output_set& out, const nlohmann::json& report) { write_files(out, report_files(report)); }

void write_files(io::output_set& out, const std::vector<report_file>& files) {
  std::vector<io::stream_writer> writers;
  for (const auto& f : files) writers.push_back([&f](std::ostream& s) { s << f.text; });
  out.write(writers);
}

std::string written_report_files(const io::output_set& out) {
  std::string list = out.shown(kFormats[0].file);
  for (std::size_t f = 1; f < kCount; ++f) list += ", " + std::string(kFormats[f].file);
  return list;
}

}  // namespace mqa::reports
