#include "output_set.hpp"

#include <stdexcept>

namespace mqa::io {

output_set::output_set(std::string_view option, const std::filesystem::path& folder, std::vector<std::string> names,
                       std::span<const named_input> inputs)
    : option_(option), names_(std::move(names)) {
  const std::vector<std::string_view> files(names_.begin(), names_.end());
  folder_ = resolve_output_folder(option, folder, files, inputs);
  if (!folder_.exists) staging_ = std::make_unique<staging_folder>(folder_.target, folder_.path);
}

output_set::~output_set() = default;

void output_set::write(std::span<const stream_writer> writers) {
  if (writers.size() != names_.size()) throw std::logic_error("output_set::write: one writer per file");
  if (staging_) {
    for (std::size_t i = 0; i < names_.size(); ++i)
      write_atomically(output_file{shown(names_[i]), staging_->path() / names_[i]}, writers[i]);
    staging_->commit();
    return;
  }
  std::vector<pending_file> files;
  for (std::size_t i = 0; i < names_.size(); ++i)
    files.push_back({resolve_output_file(option_, shown(names_[i])), writers[i]});
  write_together(files);
}

}  // namespace mqa::io
