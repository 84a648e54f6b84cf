#include "digest.hpp"

#include <fmt/core.h>
#include <xxhash.h>

#include <array>
#include <fstream>
#include <nlohmann/json.hpp>
#include <streambuf>
#include <vector>

#include "validator/input_error.hpp"
#include "validator/io/atomic_file.hpp"
#include "validator/io/input_file.hpp"
#include "validator/io/output_path.hpp"

namespace mqa::bundle {

struct byte_digest::state {
  XXH3_state_t* xxh = XXH3_createState();
  ~state() { XXH3_freeState(xxh); }
};

byte_digest::byte_digest() : state_(std::make_unique<state>()) {
  if (state_->xxh == nullptr) throw std::bad_alloc();
  XXH3_128bits_reset(state_->xxh);
}
byte_digest::~byte_digest() = default;

void byte_digest::update(const void* data, std::size_t size) { XXH3_128bits_update(state_->xxh, data, size); }

std::string byte_digest::hex() const {
  const XXH128_hash_t h = XXH3_128bits_digest(state_->xxh);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

// Passes every byte to the destination stream's buffer and to the digest (unbuffered: the
// destination buffers).
class digesting_stream::buffer : public std::streambuf {
 public:
  buffer(std::streambuf* out, byte_digest& digest) : out_(out), digest_(digest) {}

 protected:
  std::streamsize xsputn(const char* data, std::streamsize size) override {
    const std::streamsize written = out_->sputn(data, size);
    digest_.update(data, static_cast<std::size_t>(written));
    return written;
  }
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char byte = traits_type::to_char_type(c);
    return xsputn(&byte, 1) == 1 ? c : traits_type::eof();
  }
  int sync() override { return out_->pubsync(); }

 private:
  std::streambuf* out_;
  byte_digest& digest_;
};

digesting_stream::digesting_stream(std::ostream& out, byte_digest& digest)
    : std::ostream(nullptr), buffer_(std::make_unique<buffer>(out.rdbuf(), digest)) {
  rdbuf(buffer_.get());
}
digesting_stream::~digesting_stream() = default;

std::string digest_of(const exact::result& r) {
  byte_digest d;
  d.update(r.rows.data(), r.rows.size() * sizeof(r.rows[0]));
  d.update(r.logits.data(), r.logits.size() * sizeof(float));
  d.update(r.magnitude.data(), r.magnitude.size() * sizeof(r.magnitude[0]));
  d.update(r.logits_bf16.data(), r.logits_bf16.size() * sizeof(r.logits_bf16[0]));
  return d.hex();
}

std::string digest_of_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw input_error(fmt::format("{}: cannot open the file for reading", file.string()));
  byte_digest digest;
  std::vector<char> block(std::size_t{1} << 20);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    digest.update(block.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (!in.eof()) throw input_error(fmt::format("{}: cannot read the file", file.string()));
  return digest.hex();
}

void write_digests(const io::output_file& file, const file_digests& digests) {
  nlohmann::json out;
  out["schema"] = "mqacheck.bundle-digest";
  out["algorithm"] = kDigestAlgorithm;
  out["files"] = nlohmann::json::object();
  for (const auto& [name, hex] : digests) out["files"][name] = hex;
  const std::string text = out.dump(2) + "\n";
  io::write_atomically(file, [&](std::ostream& stream) { stream << text; });
}

std::optional<file_digests> read_digests(const std::filesystem::path& dir) {
  const std::filesystem::path file = dir / kDigestFile;
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(file, ec))) return std::nullopt;
  const std::string accepted = fmt::format("the digest.json `mqacheck gen` writes: {{\"schema\": "
                                            "\"mqacheck.bundle-digest\", \"algorithm\": \"{}\", \"files\": "
                                            "{{name: hex}}}}; or no digest.json",
                                            kDigestAlgorithm);
  auto bad = [&](std::string_view what) {
    return input_error(fmt::format("{}: {} (accepted: {})", file.string(), what, accepted));
  };
  io::require_regular_file(file, accepted);
  std::ifstream in(file);
  if (!in) throw bad("cannot be read");
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) throw bad("is not JSON");
  // A field's text, "" where it is missing or not a string: the checks below name what they found.
  const auto text_of = [&](const char* key) {
    const auto at = j.find(key);
    return at != j.end() && at->is_string() ? at->get<std::string>() : std::string();
  };
  if (!j.is_object() || text_of("schema") != "mqacheck.bundle-digest") throw bad("is not a bundle digest");
  if (text_of("algorithm") != kDigestAlgorithm) {
    const auto at = j.find("algorithm");
    throw bad(at == j.end() ? std::string("names no algorithm") : fmt::format("uses the algorithm {}", at->dump()));
  }
  if (!j.contains("files") || !j["files"].is_object()) throw bad("has no \"files\" object");
  file_digests digests;
  for (const auto& [name, hex] : j["files"].items()) {
    if (!hex.is_string() || hex.get<std::string>().size() != 32) throw bad(fmt::format("the digest of {} is not 32 hex digits", name));
    digests.emplace(name, hex.get<std::string>());
  }
  return digests;
}

}  // namespace mqa::bundle
