// digest.json: the XXH3-128 of every file of a bundle as `gen` wrote it, so that an accident is
// named as one, and `check --trust-digest` can take reference.npy without computing a second exact
// reference, and the arrays without generating the inputs again.
//
// What it guards against: any change to a file's bytes after `gen` wrote it (an edited case.toml,
// an array rewritten by a tool, a file copied from another bundle, a truncated or corrupted copy)
// changes its 128-bit digest, except with probability about 2^-128: accidents are caught for sure.
// It does not guard against a deliberate forger, who can rewrite digest.json too: no unkeyed hash
// can (a cryptographic one would not either). So `check` generates the inputs again and recomputes
// the reference unless told the bundle is the user's own (bundle.hpp, digest_use). XXH3 hashes at
// memory speed (tens of GB/s), so
// verifying costs about what reading the files does.
#pragma once

#include <boost/core/noncopyable.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "files.hpp"
#include "reference/exact/logits.hpp"
#include "validator/io/output_path.hpp"

namespace mqa::bundle {

inline constexpr std::string_view kDigestAlgorithm = "XXH3-128";

// The digest of an exact result in a judge's memory (its rows, logits, magnitudes and bfloat16
// logits: everything a judgement reads of it), to prove it unchanged across a kernel's launches.
std::string digest_of(const exact::result& r);

// A running XXH3-128 over bytes.
class byte_digest : boost::noncopyable {
 public:
  byte_digest();
  ~byte_digest();
  void update(const void* data, std::size_t size);
  std::string hex() const;  // 32 lowercase hex digits

 private:
  struct state;
  std::unique_ptr<state> state_;
};

// An output stream that writes through to `out` and digests every byte on the way.
class digesting_stream : public std::ostream {
 public:
  digesting_stream(std::ostream& out, byte_digest& digest);
  ~digesting_stream() override;

 private:
  class buffer;
  std::unique_ptr<buffer> buffer_;
};

// The digest of a file's bytes, read in blocks; an input_error naming the file when it cannot be read.
std::string digest_of_file(const std::filesystem::path& file);

using file_digests = std::map<std::string, std::string, std::less<>>;  // file name -> hex digest

void write_digests(const io::output_file& file, const file_digests& digests);

// The digests in dir/digest.json; nullopt when the bundle has none (written by an older mqacheck,
// or assembled by hand). A digest.json that is not the format write_digests writes is an input_error.
std::optional<file_digests> read_digests(const std::filesystem::path& dir);

}  // namespace mqa::bundle
