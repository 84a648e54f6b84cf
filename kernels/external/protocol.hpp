// The JSON-lines protocol between mqacheck and an adapter, the process that runs a kernel living
// in another project (docs/protocol.md). One request at a time: mqacheck writes one line on the
// adapter's stdin, the adapter answers one line on its stdout. stdout carries nothing else.
//
//   request   {"id": "3.1", "bundle": "<bundle folder>", "out": "<float32 .npy, poisoned>", "launch": 1}
//             an indexer's also "topk_out": "<int64 .npy to write>", "topk": 2048
//   response  {"id": "3.1", "ok": true, "seconds": 0.0012, "label": "my-kernel 1.2"}    seconds, label optional
//             {"id": "3.1", "ok": false, "error": "what went wrong"}
//             {"id": "3.1", "ok": false, "unsupported": "heads 128: the kernel takes 32 or 64"}
//
// Every response echoes its request's id: an answer that arrives late (a request answered twice,
// the second line read as the next request's answer) is then a protocol violation of the request
// it was read for, not a wrong output blamed on it.
//
// A response is checked strictly for the fields the protocol defines (types, ranges) and
// tolerant of fields it does not define: an adapter written for a later protocol still works,
// and what it adds is ignored.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mqa::external {

struct request {
  std::string id;      // unique within the run; the response must carry the same string
  std::string bundle;  // the case's bundle folder (cases/README.md "Bundles")
  std::string out;     // where the logits go: float32 [m, S >= n], pre-filled with the poison
  int launch = 1;      // 1, then 2: the same case again, compared bit for bit; 3 and up: timed, not judged
  // Sent only when the contract asks for it: "bfloat16" (the file is then uint16
  // bfloat16 bits, poisoned with 0x7FDE).
  std::optional<std::string> logits_dtype;
  // Sent only for relative columns: DeepGEMM's max_seqlen_k, the columns the output holds per row
  // (key ks[i] + c at column c; the file is [m, S >= max_seqlen_k]).
  std::optional<std::int64_t> max_seqlen_k;
  // Sent only to an indexer (run --kernel --topk-indices): where its top-k indices go, int64 [m, k]
  // (-1 padding windows shorter than k), and k. The adapter writes the file; mqacheck reads it
  // after an "ok" answer to launch 1.
  std::optional<std::string> topk_out;
  std::optional<std::int64_t> topk;
};

struct response {
  std::string id;  // the request's, checked
  bool ok = false;
  std::optional<double> seconds;     // the kernel's own time, as the adapter measured it
  std::optional<std::string> label;  // the kernel's name and version; valid UTF-8
  std::string error;                 // why the adapter could not run the case (ok = false); valid UTF-8
  // ok = false: the case is not one the kernel takes (a head count, a format it has no code for),
  // and why: one line (text.hpp one_line), at most kMaxUnsupportedBytes of the adapter's text.
  std::optional<std::string> unsupported;
};

// Thrown for a response line that does not follow the protocol; the message says what was
// wrong and quotes the start of the line.
class protocol_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr std::size_t kMaxLabelBytes = 200;
// The reason of an "unsupported" answer is cut here: it goes into every report's skipped list.
inline constexpr std::size_t kMaxUnsupportedBytes = 300;

// The request as one JSON line, newline included. Throws protocol_error when a path is not UTF-8
// (JSON strings must be).
std::string encode(const request& r);

// One response line, its newline removed, to the request whose id is `expected_id`. Throws
// protocol_error, also when the line's "id" is absent or another.
response parse_response(std::string_view line, std::string_view expected_id);

// The start of a line for a message: at most `limit` bytes of it, cut between characters, with
// control bytes and bytes outside UTF-8 shown as \xNN (text.hpp): always valid UTF-8.
std::string quote(std::string_view line, std::size_t limit = 120);

}  // namespace mqa::external
