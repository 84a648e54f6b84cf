// TOML -> case_spec. Every key has one row in a table (kCaseKeys, kLayoutKeys) naming how it is
// read and checked; a key that is in no row is an error, so typos are never ignored.
#include "kernels/registry/registry.hpp"
#include "load.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <set>
#include <sstream>
#include <toml++/toml.h>

#include "field.hpp"
#include "paged.hpp"
#include "suggest.hpp"
#include "toml_depth.hpp"
#include "validate.hpp"
#include "validator/input_error.hpp"
#include "validator/io/input_file.hpp"

namespace mqa::cases {
namespace {

// State while one case is read: its spec so far and where each value came from.
struct reading {
  case_spec spec;
  key_sources sources;
  std::set<std::string, std::less<>> seen;
};

std::string check_name(const field& f) {
  std::string name = f.string();
  const bool ok = !name.empty() && name.size() <= 128 && std::all_of(name.begin(), name.end(), [](char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
           ch == '.';
  });
  // Names become folder and test names, hence the small alphabet.
  if (!ok) f.fail(fmt::format("'{}' is not a case name (accepted: 1 to 128 of A-Z a-z 0-9 - _ .)", name));
  return name;
}

fp8::format read_data_format(const field& f) {
  const auto fmt8 = f.choice(fp8::kFormats);
  // e8m0 has no sign and no zero: it holds scale factors, never q or k data.
  if (fmt8 == fp8::format::e8m0fnu) {
    std::string data;
    for (const auto& t : fp8::kFormats)
      if (t.id != fp8::format::e8m0fnu) data += (data.empty() ? "" : ", ") + std::string(t.name);
    f.fail(fmt::format("e8m0fnu holds scale factors, not data (accepted: {})", data));
  }
  return fmt8;
}

std::vector<special_value> read_specials(const field& f) {
  std::vector<special_value> out;
  for (std::size_t i = 0; i < f.array().size(); ++i) {
    const field e = f.element(i);
    const special_value v = e.choice(kSpecialValueNames);
    if (std::find(out.begin(), out.end(), v) != out.end())
      e.fail(fmt::format("'{}' is listed twice (each special value once)", to_string(v)));
    out.push_back(v);
  }
  return out;
}

// ---- layout ---------------------------------------------------------------------------------

using layout_reader = void (*)(const field&, layout_spec&, key_sources&);

constexpr std::uint8_t kind_bit(layout_kind k) { return static_cast<std::uint8_t>(1u << static_cast<unsigned>(k)); }
constexpr std::uint8_t kEveryLayout = 0xFF;
constexpr std::uint8_t kPaged = kind_bit(layout_kind::paged);

std::vector<std::int64_t> read_int_list(const field& f, std::int64_t lo, std::int64_t hi, key_sources& sources) {
  std::vector<std::int64_t> out;
  for (std::size_t i = 0; i < f.array().size(); ++i) {
    const field e = f.element(i);
    out.push_back(e.integer(lo, hi));
    sources[e.key()] = e.where();
  }
  return out;
}

struct layout_key {
  std::string_view name;
  std::uint8_t kinds;  // the layouts the key applies to
  layout_reader read;
};

constexpr std::int32_t kInt32Min = -2147483647 - 1;

// block_table: one array of int32 entries per request (their range against the cache is checked
// in validate.cpp, where the contexts are known).
std::vector<std::vector<std::int64_t>> read_int_matrix(const field& f, key_sources& sources) {
  std::vector<std::vector<std::int64_t>> out;
  for (std::size_t i = 0; i < f.array().size(); ++i) {
    const field row = f.element(i);
    sources[row.key()] = row.where();
    out.push_back(read_int_list(row, kInt32Min, kMaxExtent, sources));
  }
  return out;
}

const std::array<layout_key, 25> kLayoutKeys{{
    {"kind", kEveryLayout, [](const field&, layout_spec&, key_sources&) {}},  // read first, below
    // Paged windows follow from the contexts: there is no window to plant out of range.
    {"out_of_range", kEveryLayout & ~kPaged,
     [](const field& f, layout_spec& l, key_sources&) { l.out_of_range = f.boolean(); }},
    {"window", kind_bit(layout_kind::sliding),
     [](const field& f, layout_spec& l, key_sources&) { l.window = f.integer(1, kMaxExtent); }},
    {"requests", kind_bit(layout_kind::packed),
     [](const field& f, layout_spec& l, key_sources&) { l.requests = f.integer(1, kMaxExtent); }},
    {"query_lengths", kind_bit(layout_kind::packed),
     [](const field& f, layout_spec& l, key_sources& s) { l.query_lengths = read_int_list(f, 1, kMaxExtent, s); }},
    // Packed contexts hold at least their rows (validate.cpp); a paged request's may be empty.
    {"context_lengths", static_cast<std::uint8_t>(kind_bit(layout_kind::packed) | kPaged),
     [](const field& f, layout_spec& l, key_sources& s) { l.context_lengths = read_int_list(f, 0, kMaxExtent, s); }},
    {"cp_rank", kind_bit(layout_kind::context_parallel),
     [](const field& f, layout_spec& l, key_sources&) { l.cp_rank = f.integer(0, kMaxExtent); }},
    {"ratio", kind_bit(layout_kind::compressed),
     [](const field& f, layout_spec& l, key_sources&) { l.ratio = f.integer(1, kMaxExtent); }},
    {"start", kind_bit(layout_kind::compressed),
     [](const field& f, layout_spec& l, key_sources&) { l.start = f.integer(0, kMaxExtent); }},
    {"first_position", kind_bit(layout_kind::compressed),
     [](const field& f, layout_spec& l, key_sources&) { l.first_position = f.integer(0, kMaxExtent); }},
    {"empty_fraction", kind_bit(layout_kind::random),
     [](const field& f, layout_spec& l, key_sources&) {
       l.empty_fraction = f.number();
       if (!(l.empty_fraction >= 0 && l.empty_fraction <= 1))
         f.fail(fmt::format("{} is out of range (accepted: a number in [0, 1])", l.empty_fraction));
     }},
    // int32 is all ks.npy and ke.npy can hold; the range against n is checked in validate.cpp.
    {"ks", kind_bit(layout_kind::explicit_windows),
     [](const field& f, layout_spec& l, key_sources& s) { l.ks = read_int_list(f, kInt32Min, kMaxExtent, s); }},
    {"ke", kind_bit(layout_kind::explicit_windows),
     [](const field& f, layout_spec& l, key_sources& s) { l.ke = read_int_list(f, kInt32Min, kMaxExtent, s); }},
    // paged; cross-key checks in validate.cpp.
    {"next_n", kPaged, [](const field& f, layout_spec& l, key_sources&) { l.next_n = f.integer(1, kMaxExtent); }},
    {"block_kv", kPaged, [](const field& f, layout_spec& l, key_sources&) { l.block_kv = f.integer(1, kMaxExtent); }},
    {"context_min", kPaged, [](const field& f, layout_spec& l, key_sources&) { l.context_min = f.integer(0, kMaxExtent); }},
    {"context_max", kPaged, [](const field& f, layout_spec& l, key_sources&) { l.context_max = f.integer(0, kMaxExtent); }},
    {"context_lens_2d", kPaged, [](const field& f, layout_spec& l, key_sources&) { l.context_lens_2d = f.boolean(); }},
    {"max_blocks", kPaged, [](const field& f, layout_spec& l, key_sources&) { l.max_blocks = f.integer(1, kMaxExtent); }},
    {"num_blocks", kPaged, [](const field& f, layout_spec& l, key_sources&) { l.num_blocks = f.integer(1, kMaxExtent); }},
    {"page_bytes", kPaged, [](const field& f, layout_spec& l, key_sources&) { l.page_bytes = f.integer(1, kMaxExtent); }},
    {"fill", kPaged,
     [](const field& f, layout_spec& l, key_sources&) { l.fill = f.choice(kPagedFillNames); }},
    {"shared_blocks", kPaged,
     [](const field& f, layout_spec& l, key_sources&) { l.shared_blocks = f.integer(1, kMaxExtent); }},
    {"unused_entries", kPaged,
     [](const field& f, layout_spec& l, key_sources&) {
       l.unused_entries = f.choice(kUnusedEntryNames);
     }},
    {"block_table", kPaged,
     [](const field& f, layout_spec& l, key_sources& s) { l.block_table = read_int_matrix(f, s); }},
}};

const layout_key* find_layout_key(std::string_view name) {
  const auto it = std::find_if(kLayoutKeys.begin(), kLayoutKeys.end(), [&](const layout_key& k) { return k.name == name; });
  return it == kLayoutKeys.end() ? nullptr : &*it;
}

std::string layout_keys_for(layout_kind kind) {
  std::string out;
  for (const auto& k : kLayoutKeys)
    if (k.kinds & kind_bit(kind)) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

void read_layout(const field& f, reading& r) {
  const toml::table& t = f.table();
  // A case's layout replaces the default's whole table: parameters of another kind never leak in.
  std::erase_if(r.sources, [](const auto& entry) { return entry.first.starts_with("layout."); });
  layout_spec l;
  const toml::node* kind_node = t.get("kind");
  if (!kind_node)
    f.fail(fmt::format("the layout table needs 'kind' (accepted: {})", names::accepted(kLayoutKindNames)));
  const field kind_field(*kind_node, "layout.kind", r.spec.name);
  l.kind = kind_field.choice(kLayoutKindNames);
  r.sources["layout.kind"] = kind_field.where();
  for (const auto& [key, node] : t) {
    const std::string path = "layout." + std::string(key.str());
    const layout_key* row = find_layout_key(key.str());
    if (!row || !(row->kinds & kind_bit(l.kind)))
      fail_at(location_of(key.source()), r.spec.name, path,
              fmt::format("{} for layout '{}'{} (accepted keys: {})", row ? "does not apply" : "unknown key",
                          to_string(l.kind), row ? "" : did_you_mean(key.str(), layout_keys_for(l.kind)),
                          layout_keys_for(l.kind)));
    const field value(node, path, r.spec.name);
    row->read(value, l, r.sources);
    r.sources[path] = value.where();
  }
  r.spec.layout = std::move(l);
}

// ---- case keys ------------------------------------------------------------------------------

using case_reader = void (*)(const field&, reading&);

struct case_key {
  std::string_view name;
  case_reader read;
};

const std::array<case_key, 21> kCaseKeys{{
    {"name", [](const field& f, reading& r) { r.spec.name = check_name(f); }},
    {"m", [](const field& f, reading& r) { r.spec.m = f.integer(1, kMaxExtent); }},
    {"n", [](const field& f, reading& r) { r.spec.n = f.integer(1, kMaxExtent); }},
    {"heads", [](const field& f, reading& r) { r.spec.heads = f.integer(1, kMaxHeads); }},
    {"head_dim", [](const field& f, reading& r) { r.spec.head_dim = f.integer(1, kMaxHeadDim); }},
    {"q_format", [](const field& f, reading& r) { r.spec.q_format = read_data_format(f); }},
    {"k_format", [](const field& f, reading& r) { r.spec.k_format = read_data_format(f); }},
    {"q_scale", [](const field& f, reading& r) { r.spec.q_scale = f.choice(kScaleKindNames); }},
    {"k_scale", [](const field& f, reading& r) { r.spec.k_scale = f.choice(kScaleKindNames); }},
    {"profile",
     [](const field& f, reading& r) { r.spec.profile = f.choice(fp8::all_profiles()); }},
    {"bound", [](const field& f, reading& r) { r.spec.bound = f.number(); }},
    {"distribution",
     [](const field& f, reading& r) { r.spec.values = f.choice(kDistributionNames); }},
    {"special", [](const field& f, reading& r) { r.spec.specials = read_specials(f); }},
    {"special_count", [](const field& f, reading& r) { r.spec.special_count = f.integer(1, 1 << 20); }},
    {"special_in",
     [](const field& f, reading& r) { r.spec.special_in = f.choice(kSpecialTargetNames); }},
    {"seed",
     [](const field& f, reading& r) { r.spec.seed = static_cast<std::uint64_t>(f.integer(0, INT64_MAX)); }},
    {"layout", read_layout},
    {"clean_logits", [](const field& f, reading& r) { r.spec.clean_logits = f.boolean(); }},
    {"topk", [](const field& f, reading& r) { r.spec.topk = f.integer(1, kMaxExtent); }},
    {"description", [](const field& f, reading& r) { r.spec.description = f.string(); }},
    {"origin", [](const field& f, reading& r) { r.spec.origin = f.string(); }},
}};

constexpr std::array<std::string_view, 5> kRequiredKeys{"name", "m", "n", "heads", "head_dim"};

const case_key* find_case_key(std::string_view name) {
  const auto it = std::find_if(kCaseKeys.begin(), kCaseKeys.end(), [&](const case_key& k) { return k.name == name; });
  return it == kCaseKeys.end() ? nullptr : &*it;
}

std::string case_key_names() {
  std::string out;
  for (const auto& k : kCaseKeys) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

// Reads every key of one table (a [[case]] or [defaults]) into r.
void read_keys(const toml::table& t, reading& r, bool is_defaults) {
  for (const auto& [key, node] : t) {
    const case_key* row = find_case_key(key.str());
    const location key_at = location_of(key.source());
    if (!row)
      fail_at(key_at, r.spec.name, key.str(),
              fmt::format("unknown key{} (accepted: {})", did_you_mean(key.str(), case_key_names()), case_key_names()));
    if (is_defaults && row->name == "name")
      fail_at(key_at, r.spec.name, "defaults.name", "a case's name cannot be a default (set it in each [[case]])");
    if (!is_defaults && row->name == "name") continue;  // read first, by read_case
    const field value(node, std::string(key.str()), r.spec.name);
    row->read(value, r);
    r.sources[std::string(key.str())] = value.where();
    r.seen.insert(std::string(key.str()));
  }
}

case_spec read_case(const toml::table& t, const toml::table* defaults, std::size_t index) {
  reading r;
  r.sources[""] = location_of(t.source());
  r.spec.name = fmt::format("#{}", index + 1);  // until the name is read, messages count cases
  if (const toml::node* name = t.get("name")) {
    const field f(*name, "name", r.spec.name);
    r.spec.name = check_name(f);
    r.sources["name"] = f.where();
    r.seen.insert("name");
  }
  if (defaults) read_keys(*defaults, r, true);
  read_keys(t, r, false);
  for (const std::string_view key : kRequiredKeys)
    if (!r.seen.contains(key))
      fail_at(r.sources[""], r.spec.name, key, "is required (set it in this [[case]] or, except name, in [defaults])");
  validate(r.spec, r.sources);
  // Defaults that depend on other keys, resolved once so the resolved case can write them.
  if (r.spec.layout.kind == layout_kind::context_parallel && !r.spec.layout.cp_rank)
    r.spec.layout.cp_rank = default_cp_rank(r.spec.m, r.spec.n);
  if (r.spec.layout.kind == layout_kind::paged) {
    layout_spec& l = r.spec.layout;
    if (!l.max_blocks) l.max_blocks = default_max_blocks(r.spec);
    if (!l.page_bytes) l.page_bytes = default_page_bytes(r.spec);
    if (!l.num_blocks) l.num_blocks = default_num_blocks(r.spec);
    if (!l.context_max) l.context_max = r.spec.n;
  }
  return r.spec;
}

void check_only_keys(const toml::table& t, std::string_view scope, std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, node] : t) {
    if (std::find(allowed.begin(), allowed.end(), key.str()) != allowed.end()) continue;
    std::string accepted;
    for (const auto a : allowed) accepted += (accepted.empty() ? "" : ", ") + std::string(a);
    fail_at(location_of(key.source()), "", scope.empty() ? std::string(key.str()) : fmt::format("{}.{}", scope, key.str()),
            fmt::format("unknown key{} (accepted: {})", did_you_mean(key.str(), accepted), accepted));
  }
}

const toml::table& table_at(const toml::table& root, std::string_view key, const location& file_start) {
  const toml::node* node = root.get(key);
  if (!node) fail_at(file_start, "", key, fmt::format("the suite needs a [{}] table", key));
  const toml::table* t = node->as_table();
  if (!t)
    fail_at(location_of(node->source()), "", key, fmt::format("expected a table, found {}", describe_type(node->type())));
  return *t;
}

}  // namespace

suite parse_suite(std::string_view text, const std::string& source_name) {
  if (const auto deep = nesting_beyond(text))
    fail_at({source_name, static_cast<std::uint32_t>(deep->line), static_cast<std::uint32_t>(deep->column)}, "", "",
            fmt::format("more than {} dots in keys on one line: tables nested that deep are not read (accepted: a "
                        "suite's few levels of keys)",
                        kMaxNestingPerLine));
  toml::table root;
  try {
    root = toml::parse(text, source_name);
  } catch (const toml::parse_error& e) {
    fail_at(location_of(e.source()), "", "", fmt::format("TOML syntax: {}", e.description()));
  }
  const location file_start{source_name, 1, 1};
  check_only_keys(root, "", {"suite", "defaults", "case"});

  suite s;
  s.file = source_name;
  const toml::table& header = table_at(root, "suite", file_start);
  check_only_keys(header, "suite", {"name", "description", "variants"});
  if (const toml::node* name = header.get("name")) {
    s.name = field(*name, "suite.name", "").string();
  } else {
    fail_at(location_of(header.source()), "", "suite.name", "is required (a string naming the suite)");
  }
  if (const toml::node* d = header.get("description")) (void)field(*d, "suite.description", "").string();
  if (const toml::node* v = header.get("variants")) {
    // The variants `mqacheck run` selects for this suite when no --variant is given.
    for (const toml::node& item : field(*v, "suite.variants", "").array()) {
      const std::string name = field(item, "suite.variants", "").string();
      if (!kernels::find_variant(name) && !kernels::is_gpu_variant_name(name)) {
        std::string known;
        for (const auto& k : kernels::all_variants()) known += (known.empty() ? "" : ", ") + k.name;
        fail_at(location_of(item.source()), "", "suite.variants",
                fmt::format("unknown variant '{}'{} (accepted: {})", name, did_you_mean(name, known), known));
      }
      s.variants.push_back(name);
    }
  }

  const toml::table* defaults = nullptr;
  if (root.contains("defaults")) defaults = &table_at(root, "defaults", file_start);

  const toml::node* cases = root.get("case");
  if (!cases) fail_at(file_start, "", "case", "the suite has no [[case]] (accepted: one or more [[case]] tables)");
  const toml::array* list = cases->as_array();
  if (!list || !list->is_array_of_tables())
    fail_at(location_of(cases->source()), "", "case", "expected an array of tables: write each case as [[case]]");

  std::map<std::string, location, std::less<>> names;
  for (std::size_t i = 0; i < list->size(); ++i) {
    const toml::table& t = *list->get(i)->as_table();
    case_spec c = read_case(t, defaults, i);
    const location at = location_of(t.get("name")->source());
    if (const auto it = names.find(c.name); it != names.end())
      fail_at(at, c.name, "name", fmt::format("is already used by the case at {} (accepted: unique names)",
                                              to_string(it->second)));
    names.emplace(c.name, at);
    s.cases.push_back(std::move(c));
  }
  return s;
}

suite load_suite(const std::filesystem::path& file) {
  const std::uintmax_t bytes = io::require_regular_file(file, "a regular TOML file");
  if (bytes > kMaxSuiteBytes)
    throw input_error(fmt::format("{}: is {} bytes; a suite file is at most {} (1 MiB)", file.string(), bytes,
                                  kMaxSuiteBytes));
  std::ifstream in(file, std::ios::binary);
  if (!in) throw input_error(fmt::format("{}: cannot be read (accepted: a readable TOML file)", file.string()));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw input_error(fmt::format("{}: read error", file.string()));
  return parse_suite(text.str(), file.string());
}

const case_spec& find_case(const suite& s, std::string_view name) {
  const auto it = std::find_if(s.cases.begin(), s.cases.end(), [&](const case_spec& c) { return c.name == name; });
  if (it != s.cases.end()) return *it;
  std::string names;
  for (const auto& c : s.cases) names += (names.empty() ? "" : ", ") + c.name;
  throw input_error(fmt::format("{}: no case named '{}' (accepted: {})", s.file.string(), name, names));
}

}  // namespace mqa::cases
