#include "resolved.hpp"

#include <fmt/core.h>
#include <fmt/format.h>

#include <array>
#include <string>
#include <vector>

namespace mqa::cases {
namespace {

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string toml_string(std::string_view text) {
  std::string out = "\"";
  for (const char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20 || u == 0x7F) {
      out += fmt::format("\\u{:04X}", u);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

// Shortest text that reads back to the same double, always in TOML's float syntax.
std::string float_text(double v) {
  std::string text = fmt::format("{}", v);
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

template <class T>
std::string list(const std::vector<T>& values) {
  return fmt::format("[{}]", fmt::join(values, ", "));
}

std::string names(const std::vector<special_value>& values) {
  std::vector<std::string> out;
  for (const auto v : values) out.push_back(toml_string(to_string(v)));
  return fmt::format("[{}]", fmt::join(out, ", "));
}

// The parameters each layout kind writes, after kind and out_of_range (indexed by layout_kind).
using layout_writer = void (*)(const case_spec&, std::string&);
void line(std::string& out, std::string_view key, std::string_view value) { out += fmt::format("{} = {}\n", key, value); }

std::string table_rows(const std::vector<std::vector<std::int64_t>>& rows) {
  std::vector<std::string> out;
  for (const auto& row : rows) out.push_back(list(row));
  return fmt::format("[{}]", fmt::join(out, ", "));
}

void paged(const case_spec& c, std::string& out) {
  const layout_spec& l = c.layout;
  line(out, "next_n", fmt::format("{}", l.next_n));
  line(out, "block_kv", fmt::format("{}", l.block_kv));
  line(out, "context_lens_2d", l.context_lens_2d ? "true" : "false");
  if (!l.context_lengths.empty()) {
    line(out, "context_lengths", list(l.context_lengths));
  } else {
    line(out, "context_min", fmt::format("{}", l.context_min));
    line(out, "context_max", fmt::format("{}", l.context_max.value_or(c.n)));
  }
  // Resolved when the case is read (load.cpp): a case.toml always has them.
  if (l.max_blocks) line(out, "max_blocks", fmt::format("{}", *l.max_blocks));
  if (l.num_blocks) line(out, "num_blocks", fmt::format("{}", *l.num_blocks));
  if (l.page_bytes) line(out, "page_bytes", fmt::format("{}", *l.page_bytes));
  if (!l.block_table.empty()) return line(out, "block_table", table_rows(l.block_table));
  line(out, "fill", toml_string(to_string(l.fill)));
  if (l.fill == paged_fill::shared_prefix) line(out, "shared_blocks", fmt::format("{}", l.shared_blocks));
  line(out, "unused_entries", toml_string(to_string(l.unused_entries)));
}

constexpr std::array<layout_writer, 8> kLayoutWriters{
    [](const case_spec&, std::string&) {},  // causal
    [](const case_spec& c, std::string& out) {
      if (c.layout.requests > 0) return line(out, "requests", fmt::format("{}", c.layout.requests));
      line(out, "query_lengths", list(c.layout.query_lengths));
      line(out, "context_lengths", list(c.layout.context_lengths));
    },
    [](const case_spec& c, std::string& out) {
      line(out, "cp_rank", fmt::format("{}", c.layout.cp_rank.value_or(default_cp_rank(c.m, c.n))));
    },
    [](const case_spec& c, std::string& out) { line(out, "window", fmt::format("{}", c.layout.window)); },
    [](const case_spec& c, std::string& out) {
      line(out, "ratio", fmt::format("{}", c.layout.ratio));
      line(out, "start", fmt::format("{}", c.layout.start));
      line(out, "first_position", fmt::format("{}", c.layout.first_position));
    },
    [](const case_spec& c, std::string& out) { line(out, "empty_fraction", float_text(c.layout.empty_fraction)); },
    [](const case_spec& c, std::string& out) {
      line(out, "ks", list(c.layout.ks));
      line(out, "ke", list(c.layout.ke));
    },
    paged,
};

}  // namespace

std::string resolved_toml(const case_spec& c, std::string_view suite_name) {
  std::string out =
      c.origin.empty()
          ? fmt::format("# The resolved case '{}': every key, defaults applied. It is a one-case suite:\n"
                        "#   mqacheck gen --cases case.toml --case {} --out DIR\n\n",
                        c.name, c.name)
          : fmt::format("# The case '{}' of a bundle cut down by `mqacheck shrink`: its arrays are its inputs, which no\n"
                        "# generator rebuilds (the keys below other than the shapes and windows describe the original).\n"
                        "#   mqacheck check DIR --logits DIR/logits.npy\n\n",
                        c.name);
  out += "[suite]\n";
  line(out, "name", toml_string(suite_name));
  out += "\n[[case]]\n";
  line(out, "name", toml_string(c.name));
  if (!c.description.empty()) line(out, "description", toml_string(c.description));
  if (!c.origin.empty()) line(out, "origin", toml_string(c.origin));
  line(out, "m", fmt::format("{}", c.m));
  line(out, "n", fmt::format("{}", c.n));
  line(out, "heads", fmt::format("{}", c.heads));
  line(out, "head_dim", fmt::format("{}", c.head_dim));
  line(out, "q_format", toml_string(fp8::traits(c.q_format).name));
  line(out, "k_format", toml_string(fp8::traits(c.k_format).name));
  line(out, "q_scale", toml_string(to_string(c.q_scale)));
  line(out, "k_scale", toml_string(to_string(c.k_scale)));
  line(out, "profile", toml_string(fp8::rules(c.profile).name));
  if (c.bound) line(out, "bound", float_text(*c.bound));
  line(out, "distribution", toml_string(to_string(c.values)));
  line(out, "special", names(c.specials));
  line(out, "special_count", fmt::format("{}", c.special_count));
  line(out, "special_in", toml_string(to_string(c.special_in)));
  line(out, "seed", fmt::format("{}", c.seed));
  line(out, "clean_logits", c.clean_logits ? "true" : "false");
  if (c.topk) line(out, "topk", fmt::format("{}", *c.topk));
  out += "\n[case.layout]\n";
  line(out, "kind", toml_string(to_string(c.layout.kind)));
  if (c.layout.kind != layout_kind::paged) line(out, "out_of_range", c.layout.out_of_range ? "true" : "false");
  kLayoutWriters[static_cast<std::size_t>(c.layout.kind)](c, out);
  return out;
}

}  // namespace mqa::cases
