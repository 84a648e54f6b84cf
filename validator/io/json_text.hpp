// The text of a JSON document as mqacheck writes it. Strings in a report can carry what an adapter
// or a user's file said, and a byte that is not UTF-8 there must not cost the whole file
// (nlohmann's default throws type_error 316): every such byte is written as U+FFFD instead. The
// text mqacheck produces itself is UTF-8, so nothing else changes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace mqa::io {

// `indent` as nlohmann's dump() takes it: -1 for one line, otherwise spaces per level.
inline std::string json_text(const nlohmann::json& document, int indent = -1) {
  return document.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace mqa::io
