// Writing a bundle: the target checked and a staging folder reserved before any work, every file
// written into the staging folder, then one rename.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>
#include <system_error>
#include <functional>
#include <span>

#include "bundle.hpp"
#include "digest.hpp"
#include "files.hpp"
#include "validator/case/resolved.hpp"
#include "validator/input_error.hpp"
#include "validator/io/atomic_file.hpp"
#include "validator/io/npy.hpp"
#include "validator/io/output_path.hpp"

namespace mqa::bundle {
namespace {

namespace fs = std::filesystem;

bool is_bundle_file(std::string_view name) {
  return name == kCaseFile || name == kDigestFile ||
         std::ranges::any_of(kArrayFiles, [&](const array_file_info& f) { return f.file == name; });
}

std::string bundle_file_names() {
  std::vector<std::string_view> names{kCaseFile};
  for (const auto& f : kArrayFiles) names.push_back(f.file);
  names.push_back(kDigestFile);
  return fmt::format("{}", fmt::join(names, ", "));
}

// --force replaces a folder only when nothing in it is foreign to a bundle: case.toml and the
// arrays (folders of those names are foreign), or nothing at all.
void check_replaceable(const fs::path& shown, const fs::path& folder) {
  std::vector<std::string> foreign;
  bool has_case = false, empty = true;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    empty = false;
    const std::string name = entry.path().filename().string();
    std::error_code type_ec;
    if (is_bundle_file(name) && !entry.is_directory(type_ec))
      has_case |= name == kCaseFile;
    else
      foreign.push_back(name);
  }
  if (ec) throw input_error(fmt::format("{}: cannot list the folder ({})", shown.string(), ec.message()));
  if (empty || (has_case && foreign.empty())) return;
  std::ranges::sort(foreign);
  const std::string what =
      !foreign.empty()
          ? fmt::format("it holds {}{}", fmt::join(foreign.begin(), foreign.begin() + std::min<std::size_t>(foreign.size(), 5), ", "),
                        foreign.size() > 5 ? fmt::format(" and {} more", foreign.size() - 5) : "")
          : fmt::format("it has no {}", kCaseFile);
  throw input_error(fmt::format("{}: not a bundle, so --force does not replace it: {} (a bundle holds only {})",
                                shown.string(), what, bundle_file_names()));
}

// Two 4-bit codes per byte: element 2c in the low nibble, 2c + 1 in the high one.
std::vector<std::uint8_t> pack_nibbles(const std::vector<std::uint8_t>& codes) {
  std::vector<std::uint8_t> bytes(codes.size() / 2);
  for (std::size_t c = 0; c < bytes.size(); ++c)
    bytes[c] = static_cast<std::uint8_t>((codes[2 * c] & 0x0F) | ((codes[2 * c + 1] & 0x0F) << 4));
  return bytes;
}

// One file of the bundle through a temporary, its bytes digested on the way.
void write_digested(const fs::path& shown, const fs::path& folder, std::string_view name, file_digests& digests,
                    const std::function<void(std::ostream&)>& write) {
  byte_digest digest;
  io::write_atomically(io::output_file{shown / name, folder / name}, [&](std::ostream& out) {
    digesting_stream through(out, digest);
    write(through);
    through.flush();
  });
  digests.emplace(std::string(name), digest.hex());
}

template <class T>
void write_array(const fs::path& shown, const fs::path& folder, array_file f, const std::vector<T>& values,
                 const inputs::tensors& t, file_digests& digests) {
  const auto& info = info_of(f);
  const std::vector<std::size_t> shape = shape_of(f, t);
  std::size_t size = 1;
  for (const auto extent : shape) size *= extent;
  // A bundle assembled by hand (tests, tools) with the wrong sizes is a bug, not bad input.
  if (values.size() != size)
    throw std::logic_error(fmt::format("bundle: {} has {} values, its shape needs {}", info.file, values.size(), size));
  write_digested(shown, folder, info.file, digests, [&](std::ostream& out) {
    io::write_npy_stream<T>(out, shape, [&](const auto& put) { put(std::span<const T>(values)); });
  });
}

// Rows of the reference per block: about 64 MiB of float32, a multiple of 8 rows (exact::compute's
// blocks), so that a block keeps every core busy while the whole never sits in memory.
std::int64_t reference_block_rows(std::int64_t m, std::int64_t n) {
  const std::int64_t rows = std::max<std::int64_t>(8, (std::int64_t{1} << 24) / std::max<std::int64_t>(n, 1)) / 8 * 8;
  return std::clamp<std::int64_t>(rows, 1, std::max<std::int64_t>(m, 1));
}

// case.toml and every array of the case into `folder`; with `rows`, reference.npy too. Returns
// the digest of every file written.
file_digests write_files(const fs::path& shown, const fs::path& folder, const cases::case_spec& spec,
                         std::string_view suite_name, const inputs::tensors& t, const reference_rows* rows) {
  file_digests digests;
  const std::string toml = cases::resolved_toml(spec, suite_name);
  write_digested(shown, folder, kCaseFile, digests, [&](std::ostream& out) { out << toml; });
  write_array(shown, folder, array_file::q, packed(t.q_format) ? pack_nibbles(t.q) : t.q, t, digests);
  if (carries(array_file::q_sf, t)) write_array(shown, folder, array_file::q_sf, t.q_block_scale, t, digests);
  if (t.paged) {
    write_array(shown, folder, array_file::kv_cache, t.paged->kv_cache, t, digests);
    write_array(shown, folder, array_file::block_table, t.paged->block_table, t, digests);
    write_array(shown, folder, array_file::context_lens, t.paged->context_lens, t, digests);
  } else {
    write_array(shown, folder, array_file::k, packed(t.k_format) ? pack_nibbles(t.k) : t.k, t, digests);
    if (carries(array_file::k_sf, t)) write_array(shown, folder, array_file::k_sf, t.k_block_scale, t, digests);
    write_array(shown, folder, array_file::k_scale, t.k_scale, t, digests);
  }
  write_array(shown, folder, array_file::weights, t.weights, t, digests);
  write_array(shown, folder, array_file::ks, t.ks, t, digests);
  write_array(shown, folder, array_file::ke, t.ke, t, digests);
  if (!rows) return digests;
  const std::int64_t block = reference_block_rows(t.m, t.n);
  std::vector<float> buffer;
  write_digested(shown, folder, info_of(array_file::reference).file, digests, [&](std::ostream& out) {
    io::write_npy_stream<float>(out, shape_of(array_file::reference, t), [&](const auto& put) {
      for (std::int64_t first = 0; first < t.m; first += block) {
        const std::int64_t count = std::min(block, t.m - first);
        buffer.resize(static_cast<std::size_t>(count * t.n));
        (*rows)(first, count, buffer);
        put(std::span<const float>(buffer));
      }
    });
  });
  return digests;
}

}  // namespace

bundle_writer::bundle_writer(std::string_view option, const fs::path& dir, bool replace) : shown_(dir) {
  const io::output_folder out = io::resolve_output_folder(option, dir, {});
  if (out.exists && !replace)
    throw input_error(fmt::format("{}: already exists (choose another folder, or replace a bundle with --force)",
                                  dir.string()));
  if (out.exists) check_replaceable(dir, out.target);
  replace_existing_ = out.exists;
  staging_ = std::make_unique<io::staging_folder>(out.target, dir);
}

bundle_writer::~bundle_writer() = default;

void bundle_writer::write(const bundle& b, const extra_files& extra) {
  const auto cells = static_cast<std::size_t>(b.inputs.m * b.inputs.n);
  if (b.reference.size() != cells)
    throw std::logic_error(fmt::format("bundle: reference.npy has {} values, its shape needs {}", b.reference.size(), cells));
  write(
      b.spec, b.suite_name, b.inputs,
      [&](std::int64_t first, std::int64_t count, std::span<float> out) {
        const auto begin = b.reference.begin() + first * b.inputs.n;
        std::copy(begin, begin + count * b.inputs.n, out.begin());
      },
      extra);
}

void bundle_writer::write(const cases::case_spec& spec, std::string_view suite_name, const inputs::tensors& t,
                          const reference_rows& rows, const extra_files& extra) {
  const fs::path& folder = staging_->path();
  file_digests digests = write_files(shown_, folder, spec, suite_name, t, &rows);
  write_digests(io::output_file{shown_ / kDigestFile, folder / kDigestFile}, digests);
  if (extra) extra(folder, shown_);
  if (replace_existing_)
    staging_->commit_replacing();
  else
    staging_->commit();
}

void write_kernel_inputs(const cases::case_spec& spec, std::string_view suite_name, const inputs::tensors& t,
                         const fs::path& folder, const fs::path& shown) {
  write_files(shown, folder, spec, suite_name, t, nullptr);
}

void write_bundle(const bundle& b, const fs::path& dir, bool replace) { bundle_writer("", dir, replace).write(b); }

}  // namespace mqa::bundle
