// The formats a run's report is written in: one registry, read by `run --out`, `merge --out` and
// `certify --out`, their file listings and their help. Each row is a file, the writer that makes
// it from a report.json document (suite_json of a run, or merge_shards of its shards) alone, and
// one line on what it is for; reports/README.md documents each file's content. The first row is
// report.json itself, the document the others are made from: it is put in place last (readers
// look for it) and listed with its folder. A new format is one row in formats.cpp and its writer
// (reports/README.md, "How to add a report format").
#pragma once

#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "validator/io/output_set.hpp"

namespace mqa::reports {

struct report_format {
  std::string_view file;                               // "report.xml"
  std::string (*write)(const nlohmann::json& report);  // the file's text
  std::string_view description;                        // what it holds, for whom: one line
  std::string_view help_note;  // said after the file in `run --out`'s help ("JUnit"), or empty
};

// report.json, report.xml, summary.md, report.html: the order they are listed in.
std::span<const report_format> report_formats();

// A file of `run --out` (and `merge --out`, `certify --out`) with its text.
struct report_file {
  std::string name;
  std::string text;
};
// Every format's file made from a report.json document (checked by check_report,
// validator/verdict/read_report.hpp), in the order they are put in place: report.json last.
std::vector<report_file> report_files(const nlohmann::json& report);
// Their names, in the same order.
std::vector<std::string> report_file_names();

// "report.json, report.xml (JUnit), summary.md and report.html" for an --out option's help; the
// notes only when `with_notes`.
std::string report_file_list(bool with_notes);
// "DIR/report.json, report.xml, summary.md, report.html": the files `out` received, as run and
// merge print them after writing.
std::string written_report_files(const io::output_set& out);
// `files` put in place in `out` (made with their names in the same order).
void write_files(io::output_set& out, const std::vector<report_file>& files);
// report_files(report) put in place in `out` (made with report_file_names()).
void write_report_files(io::output_set& out, const nlohmann::json& report);

}  // namespace mqa::reports
