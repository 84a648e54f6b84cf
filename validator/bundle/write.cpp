// Writing a bundle: everything into a temporary sibling folder, then one rename.
#include <fmt/core.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <stdexcept>
#include <system_error>
#include <xtensor/xadapt.hpp>

#include "bundle.hpp"
#include "files.hpp"
#include "validator/case/resolved.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"

namespace mqa::bundle {
namespace {

namespace fs = std::filesystem;

// Removes a folder on scope exit unless released: the "nothing left behind" of every error path.
class folder_guard {
 public:
  explicit folder_guard(fs::path p) : path_(std::move(p)) {}
  folder_guard(const folder_guard&) = delete;
  folder_guard& operator=(const folder_guard&) = delete;
  ~folder_guard() {
    if (path_.empty()) return;
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  void release() { path_.clear(); }

 private:
  fs::path path_;
};

// A name next to `dir` that no other writer in this or another process uses.
fs::path sibling(const fs::path& dir, std::string_view purpose) {
  static std::atomic<unsigned> counter{0};
  return dir.parent_path() / fmt::format(".{}.{}-{}-{}", dir.filename().string(), purpose, ::getpid(), counter++);
}

template <class T>
void write_array(const fs::path& folder, array_file f, const std::vector<T>& values, const inputs::tensors& t) {
  const auto& info = kArrayFiles[static_cast<std::size_t>(f)];
  const std::vector<std::size_t> shape = shape_of(f, t);
  std::size_t size = 1;
  for (const auto extent : shape) size *= extent;
  // A bundle assembled by hand (tests, tools) with the wrong sizes is a bug, not bad input.
  if (values.size() != size)
    throw std::logic_error(fmt::format("bundle: {} has {} values, its shape needs {}", info.file, values.size(), size));
  const xt::xarray<T> array = xt::adapt(values, shape);
  io::write_npy(folder / info.file, array);
}

void write_text(const fs::path& file, const std::string& text) {
  std::ofstream out(file, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw input_error(fmt::format("{}: cannot write the file", file.string()));
}

[[noreturn]] void fail(const fs::path& dir, std::string_view what) {
  throw input_error(fmt::format("{}: {}", dir.string(), what));
}

}  // namespace

void write_bundle(const bundle& b, const fs::path& out, bool replace) {
  const fs::path dir = out.has_filename() ? out : out.parent_path();  // "dir/" names dir
  std::error_code ec;
  const fs::path parent = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
  if (!fs::is_directory(parent, ec)) fail(dir, fmt::format("the parent folder {} does not exist", parent.string()));
  const bool exists = fs::exists(fs::symlink_status(dir, ec));
  if (exists && !replace) fail(dir, "already exists (choose another folder, or replace it with --force)");
  if (exists && !fs::is_directory(fs::symlink_status(dir, ec))) fail(dir, "exists and is not a folder");

  const fs::path staging = sibling(dir, "partial");
  if (!fs::create_directory(staging, ec)) fail(staging, fmt::format("cannot create a folder ({})", ec.message()));
  folder_guard staging_guard(staging);

  write_text(staging / kCaseFile, cases::resolved_toml(b.spec, b.suite_name));
  const inputs::tensors& t = b.inputs;
  write_array(staging, array_file::q, t.q, t);
  write_array(staging, array_file::k, t.k, t);
  write_array(staging, array_file::k_scale, t.k_scale, t);
  write_array(staging, array_file::weights, t.weights, t);
  write_array(staging, array_file::ks, t.ks, t);
  write_array(staging, array_file::ke, t.ke, t);
  write_array(staging, array_file::reference, b.reference, t);

  if (exists) {
    // rename(2) cannot replace a non-empty folder: move the old one aside first, then drop it.
    const fs::path old = sibling(dir, "old");
    fs::rename(dir, old, ec);
    if (ec) fail(dir, fmt::format("cannot move the existing folder aside ({})", ec.message()));
    folder_guard old_guard(old);
    fs::rename(staging, dir, ec);
    if (ec) {
      std::error_code ignored;
      fs::rename(old, dir, ignored);  // put the old bundle back
      old_guard.release();
      fail(dir, fmt::format("cannot rename the new bundle into place ({})", ec.message()));
    }
  } else {
    fs::rename(staging, dir, ec);
    if (ec) fail(dir, fmt::format("cannot rename the new bundle into place ({})", ec.message()));
  }
  staging_guard.release();
}

}  // namespace mqa::bundle
