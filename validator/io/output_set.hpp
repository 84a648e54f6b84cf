// Several files that appear in one folder together (`run --out`: report.json, report.xml,
// summary.md): the folder and each file's path are checked when this object
// is made, before any work; nothing is created in the user's folder until write(); a reader never
// sees one file of the set without the others from the same run.
//
//   - a new folder: a hidden staging folder next to it (made now, removed on failure and on
//     SIGINT/SIGTERM) receives the files and is renamed to the folder: all appear at once;
//   - an existing folder (or a link to one): each file goes to a temporary next to its target and
//     all are renamed in order with interrupts held (atomic_file.hpp's write_together).
#pragma once

#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "atomic_file.hpp"
#include "output_path.hpp"
#include "staging_folder.hpp"

namespace mqa::io {

class output_set {
 public:
  // `names`: the files, in the order they are put in place (the one readers look for, last);
  // `inputs`: files none of them may replace (the suite a run reads).
  output_set(std::string_view option, const std::filesystem::path& folder, std::vector<std::string> names,
             std::span<const named_input> inputs = {});
  ~output_set();
  output_set(const output_set&) = delete;
  output_set& operator=(const output_set&) = delete;

  // One writer per name, in the same order.
  void write(std::span<const stream_writer> writers);

  // "reports/report.json" for messages and listings (no "//").
  std::string shown(std::string_view name) const { return shown_inside(folder_.path, name); }

 private:
  std::string option_;
  output_folder folder_;
  std::vector<std::string> names_;
  std::unique_ptr<staging_folder> staging_;  // only for a new folder
};

}  // namespace mqa::io
