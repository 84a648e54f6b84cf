#include "protocol.hpp"

#include "text.hpp"

#include <fmt/core.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace mqa::external {
namespace {

using json = nlohmann::json;

[[noreturn]] void fail(std::string_view line, std::string_view what) {
  throw protocol_error(fmt::format("{} (the line: {})", what, quote(line)));
}

bool has_control_bytes(std::string_view s) {
  for (const unsigned char c : s)
    if (c < 0x20 || c == 0x7F) return true;
  return false;
}

}  // namespace

std::string quote(std::string_view line, std::size_t limit) {
  const std::string_view shown = cut_utf8(line, limit);
  // Appends, not "'" + ...: GCC 12 misreads that as an overlapping copy (-Wrestrict, bug 105329).
  std::string out(1, '\'');
  out.append(escaped_bytes(shown));
  out.append(shown.size() < line.size() ? fmt::format("'... ({} bytes)", line.size()) : std::string("'"));
  return out;
}

std::string encode(const request& r) {
  json j = {{"id", r.id}, {"bundle", r.bundle}, {"out", r.out}, {"launch", r.launch}};
  if (r.logits_dtype) j["logits_dtype"] = *r.logits_dtype;
  if (r.max_seqlen_k) {
    j["columns"] = "relative";
    j["max_seqlen_k"] = *r.max_seqlen_k;
  }
  if (r.topk_out && r.topk) {
    j["topk_out"] = *r.topk_out;
    j["topk"] = *r.topk;
  }
  try {
    return j.dump() + "\n";
  } catch (const json::type_error& e) {
    throw protocol_error(fmt::format("cannot send the request for {}: a path is not UTF-8 ({})", r.bundle, e.what()));
  }
}

response parse_response(std::string_view line, std::string_view expected_id) {
  json j;
  try {
    j = json::parse(line);
  } catch (const json::out_of_range&) {
    fail(line, "the adapter's answer holds a number beyond float64's range");
  } catch (const json::parse_error&) {
    fail(line, "the adapter answered a line that is not JSON; stdout is reserved for protocol lines, "
               "so the adapter's own messages must go to stderr");
  }
  if (!j.is_object()) fail(line, fmt::format("the adapter answered a JSON {} where an object was expected", j.type_name()));
  const auto id = j.find("id");
  if (id == j.end() || id->is_null())
    fail(line, fmt::format("the adapter's answer has no \"id\" (expected \"{}\"): every response must echo its "
                           "request's \"id\"",
                           expected_id));
  if (!id->is_string())
    fail(line, fmt::format("\"id\" is a JSON {}, expected the request's id, the string \"{}\"", id->type_name(), expected_id));
  if (id->get_ref<const std::string&>() != expected_id)
    fail(line, fmt::format("the adapter answered request \"{}\" where the answer to request \"{}\" was expected: an "
                           "answer arriving late, or one request answered twice",
                           valid_utf8(id->get_ref<const std::string&>()), expected_id));
  const auto ok = j.find("ok");
  if (ok == j.end()) fail(line, "the adapter's answer has no \"ok\" field (expected {\"ok\": true, ...} or {\"ok\": false, \"error\": ...})");
  if (!ok->is_boolean()) fail(line, fmt::format("\"ok\" is a JSON {}, expected true or false", ok->type_name()));

  response r;
  r.id = std::string(expected_id);
  r.ok = ok->get<bool>();
  if (const auto unsupported = j.find("unsupported"); unsupported != j.end() && !unsupported->is_null()) {
    if (!unsupported->is_string())
      fail(line, fmt::format("\"unsupported\" is a JSON {}, expected a string saying why the kernel does not take "
                             "this case",
                             unsupported->type_name()));
    if (r.ok) fail(line, "the adapter answered \"ok\": true with \"unsupported\": a case it does not take is answered "
                         "\"ok\": false");
    const std::string& why = unsupported->get_ref<const std::string&>();
    r.unsupported = why.empty() ? std::string("(the adapter gave no reason)") : one_line(why, kMaxUnsupportedBytes);
    return r;
  }
  if (!r.ok) {
    const auto error = j.find("error");
    if (error == j.end() || !error->is_string())
      fail(line, "the adapter answered \"ok\": false without an \"error\" string saying why (or an \"unsupported\" "
                 "string, for a case the kernel does not take)");
    // The JSON parser checked the string is UTF-8; valid_utf8 makes that this file's promise.
    r.error = valid_utf8(error->get<std::string>());
    if (r.error.empty()) r.error = "(the adapter gave an empty error message)";
    return r;
  }
  if (const auto seconds = j.find("seconds"); seconds != j.end() && !seconds->is_null()) {
    if (!seconds->is_number()) fail(line, fmt::format("\"seconds\" is a JSON {}, expected a number", seconds->type_name()));
    const double s = seconds->get<double>();
    if (!std::isfinite(s) || s < 0) fail(line, fmt::format("\"seconds\" is {}, expected a finite number >= 0", s));
    r.seconds = s;
  }
  if (const auto label = j.find("label"); label != j.end() && !label->is_null()) {
    if (!label->is_string()) fail(line, fmt::format("\"label\" is a JSON {}, expected a string", label->type_name()));
    std::string l = label->get<std::string>();
    if (l.empty() || l.size() > kMaxLabelBytes || has_control_bytes(l))
      fail(line, fmt::format("\"label\" must be 1 to {} bytes without control characters", kMaxLabelBytes));
    r.label = valid_utf8(l);
  }
  return r;
}

}  // namespace mqa::external
