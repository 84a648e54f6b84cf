#include "output_path.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "validator/input_error.hpp"

namespace mqa::io {
namespace {

namespace fs = std::filesystem;

// Linux's limit on links followed while resolving one path (ELOOP).
constexpr int kMaxLinks = 40;

constexpr std::string_view kFileAccepted = "accepted: a regular file, which is replaced whole, or a new path";
constexpr std::string_view kFolderAccepted = "accepted: a folder, or a new path in an existing folder";
constexpr std::string_view kParentAccepted = "accepted: a path in an existing folder";

[[noreturn]] void fail(std::string_view option, const fs::path& path, std::string_view what) {
  throw input_error(option.empty() ? fmt::format("{}: {}", path.string(), what)
                                   : fmt::format("{} {}: {}", option, path.string(), what));
}

fs::file_type type_of(const fs::path& p) {
  std::error_code ec;
  return fs::symlink_status(p, ec).type();
}

// "links to X, which is" when `target` differs from `path`, so the user sees which file is meant.
std::string subject(const fs::path& path, const fs::path& target) {
  return path == target ? "is" : fmt::format("links to {}, which is", target.string());
}

// The folder that will hold `target`: it must exist and take new entries.
void check_parent(std::string_view option, const fs::path& path, const fs::path& target) {
  const fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::error_code ec;
  const fs::file_type type = fs::status(parent, ec).type();  // a link to a folder is a folder here
  if (type == fs::file_type::not_found)
    fail(option, path, fmt::format("the folder {} does not exist ({})", parent.string(), kParentAccepted));
  if (type != fs::file_type::directory)
    fail(option, path, fmt::format("{} is {}, not a folder ({})", parent.string(), describe(type), kParentAccepted));
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    fail(option, path, fmt::format("cannot create files in the folder {} ({})", parent.string(), std::strerror(errno)));
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::equivalent(a, b, ec)) return true;  // hard links and links included, when both exist
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec), ec);
  std::error_code ec2;
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec2), ec2);
  return !ec && !ec2 && ca == cb;
}

// A trailing separator names the folder itself: "reports/" is "reports".
fs::path without_trailing_separator(const fs::path& p) {
  return p.has_filename() || !p.has_parent_path() || p.parent_path() == p ? p : p.parent_path();
}

}  // namespace

std::string_view describe(fs::file_type type) {
  switch (type) {
    case fs::file_type::regular: return "a regular file";
    case fs::file_type::directory: return "a folder";
    case fs::file_type::symlink: return "a symbolic link";
    case fs::file_type::block: return "a block device";
    case fs::file_type::character: return "a character device";
    case fs::file_type::fifo: return "a FIFO (named pipe)";
    case fs::file_type::socket: return "a socket";
    case fs::file_type::not_found: return "missing";
    default: return "of a kind that cannot be examined";
  }
}

fs::path follow_links(const fs::path& path) {
  fs::path current = path;
  for (int hops = 0; hops <= kMaxLinks; ++hops) {
    if (type_of(current) != fs::file_type::symlink) return current;
    std::error_code ec;
    const fs::path link = fs::read_symlink(current, ec);
    if (ec) throw input_error(fmt::format("{}: cannot read the symbolic link ({})", current.string(), ec.message()));
    current = link.is_absolute() ? link : current.parent_path() / link;
  }
  throw input_error(fmt::format("{}: too many levels of symbolic links", path.string()));
}

output_file resolve_output_file(std::string_view option, const fs::path& path, std::span<const named_input> inputs) {
  if (path.empty()) throw input_error(fmt::format("{}: empty path ({})", option, kFileAccepted));
  const fs::path target = follow_links(path);
  const fs::file_type type = type_of(target);
  if (type != fs::file_type::not_found && type != fs::file_type::regular)
    fail(option, path, fmt::format("{} {} ({})", subject(path, target), describe(type), kFileAccepted));
  if (!target.has_filename()) fail(option, path, fmt::format("names a folder ({})", kFileAccepted));
  if (const std::size_t name = target.filename().string().size(); name + kTemporaryNameBytes > kMaxNameBytes)
    fail(option, path,
         fmt::format("its name is {} bytes (accepted: at most {}, which leaves room for the temporary name it is "
                     "written under)",
                     name, kMaxNameBytes - kTemporaryNameBytes));
  check_parent(option, path, target);
  for (const named_input& input : inputs)
    if (!input.path.empty() && same_file(target, input.path))
      fail(option, path,
           fmt::format("is the same file as {} ({}); an output never replaces an input (choose another path)",
                       input.what, input.path.string()));
  return {path, target};
}

output_folder resolve_output_folder(std::string_view option, const fs::path& path, std::span<const std::string_view> files,
                                    std::span<const named_input> inputs) {
  if (path.empty()) throw input_error(fmt::format("{}: empty path ({})", option, kFolderAccepted));
  const fs::path given = without_trailing_separator(path), linked = follow_links(given);
  const fs::file_type type = type_of(linked);
  // Absolute and normal, so that "." or "sub/.." has a parent to stage the folder in.
  std::error_code ec;
  fs::path target = fs::weakly_canonical(fs::absolute(linked), ec);
  if (ec) target = fs::absolute(linked).lexically_normal();
  target = without_trailing_separator(target);
  output_folder out{path, target, type == fs::file_type::directory};
  if (type == fs::file_type::not_found) {
    check_parent(option, path, target);
    return out;
  }
  if (!out.exists) fail(option, path, fmt::format("{} {} ({})", subject(given, linked), describe(type), kFolderAccepted));
  if (::access(target.c_str(), W_OK | X_OK) != 0)
    fail(option, path, fmt::format("cannot create files in this folder ({})", std::strerror(errno)));
  for (const std::string_view file : files) resolve_output_file(option, shown_inside(path, file), inputs);
  return out;
}

std::string shown_inside(const fs::path& folder, std::string_view file) {
  return (folder / file).lexically_normal().string();
}

}  // namespace mqa::io
