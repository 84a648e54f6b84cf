// A folder that appears whole or not at all (a bundle, a new report folder): a hidden sibling of
// the target is created up front (which also proves, before any work, that the target's folder
// takes new entries), filled, then renamed to the target. Until then it is removed when this
// object dies (a failure) and on SIGINT/SIGTERM (interrupt.hpp): an interrupted command leaves no
// `.NAME.partial-*` behind. Messages name the target as the user gave it, never the staging name.
#pragma once

#include <filesystem>
#include <memory>

namespace mqa::io {

class removed_on_interrupt;

class staging_folder {
 public:
  // `target` is where the folder goes (links already followed); `shown` is the user's name for it.
  staging_folder(const std::filesystem::path& target, const std::filesystem::path& shown);
  ~staging_folder();
  staging_folder(const staging_folder&) = delete;
  staging_folder& operator=(const staging_folder&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Renames the staging folder to the target, which must not exist.
  void commit();

  // Replaces the existing folder at the target, whose contents the caller has judged replaceable:
  // with interrupts held, the old folder is moved aside and the new one renamed into place (the
  // old one is put back if that fails); then the old one and its files are removed.
  void commit_replacing();

 private:
  std::filesystem::path target_, shown_, path_;
  std::unique_ptr<removed_on_interrupt> on_interrupt_;
  bool committed_ = false;
};

}  // namespace mqa::io
