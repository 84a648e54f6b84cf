// `mqacheck fp8 decode|encode|table|convert|compare`: the fp8 emulators on the command line.
#include <fmt/core.h>

#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "reference/fp8/convert.hpp"
#include "validator/activity.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"
#include "validator/io/output_path.hpp"
#include "commands.hpp"

namespace mqa::cli {
namespace {

namespace fp8 = mqa::fp8;

struct fp8_options {
  std::string format = "e4m3fn";
  std::string profile = "ml_dtypes";
  std::optional<double> bound;
};

fp8::format parse_format(const std::string& name) {
  if (const auto f = fp8::parse_format(name)) return *f;
  throw input_error(fmt::format("unknown fp8 format '{}' (accepted: {})", name, fp8::format_names()));
}

fp8::conversion parse_conversion(const fp8_options& o) {
  const fp8::format f = parse_format(o.format);
  const auto p = fp8::parse_profile(o.profile);
  if (!p) throw input_error(fmt::format("unknown profile '{}' (accepted: {})", o.profile, fp8::profile_names()));
  const fp8::conversion c{f, *p, o.bound};
  if (const auto why = fp8::why_invalid(c)) throw input_error(*why);
  return c;
}

// What a format's codes are, for messages: "0x00..0xFF or 0..255", "0x0..0xF or 0..15" (e2m1fn).
std::string accepted_codes(const fp8::format_traits& t) {
  const unsigned last = fp8::code_count(t) - 1;
  return fmt::format("0x{:0{}X}..0x{:X} or 0..{}", 0, t.bits / 4, last, last);
}

std::uint8_t parse_code(const std::string& text, const fp8::format_traits& t) {
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  const char* first = text.data() + (hex ? 2 : 0);
  const char* last = text.data() + text.size();
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(first, last, value, hex ? 16 : 10);
  if (text.empty() || ec != std::errc{} || end != last || !fp8::is_code(t, value))
    throw input_error(fmt::format("'{}' is not {} code (accepted: {})", text,
                                  t.bits == 8 ? std::string("an fp8") : fmt::format("an {}", t.name), accepted_codes(t)));
  return static_cast<std::uint8_t>(value);
}

// A code as the commands print it: two hex digits, one for a 4-bit format.
std::string code_text(const fp8::format_traits& t, std::uint8_t code) { return fmt::format("0x{:0{}X}", code, t.bits / 4); }

double parse_value(const std::string& text) {
  // strtod accepts decimal, hex floats ("0x1.8p+3"), "inf" and "nan" and rounds correctly.
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.starts_with("--")) throw input_error(fmt::format("unknown option '{}' (see --help)", text));
  if (text.empty() || end != text.c_str() + text.size())
    throw input_error(fmt::format("'{}' is not a number (accepted: decimal, hex float such as 0x1.8p+3, inf, nan)",
                                  text));
  return value;
}

// A value as the commands print it. A NaN code's sign bit means nothing as a number, and C's
// "-nan" reads like a different value from "nan": every NaN prints as "nan" (the code itself, in
// `table` and `compare`, still shows the bits).
std::string value_text(double v) { return std::isnan(v) ? std::string("nan") : fmt::format("{}", v); }

std::string bits_of(const fp8::format_traits& t, std::uint8_t code) {
  std::string out;
  int bit = t.bits - 1;
  auto take = [&](int count) {
    for (int i = 0; i < count; ++i, --bit) out += ((code >> bit) & 1) ? '1' : '0';
  };
  if (t.is_signed) {
    take(1);
    out += '.';
  }
  take(t.exponent_bits);
  if (t.mantissa_bits > 0) {
    out += '.';
    take(t.mantissa_bits);
  }
  return out;
}

void add_conversion_flags(CLI::App& cmd, fp8_options& o, bool with_profile) {
  cmd.add_option("--format", o.format, std::string("fp8 format: ") + std::string(fp8::format_names()))->required();
  if (with_profile) {
    cmd.add_option("--profile", o.profile,
                   std::string("producer whose rules apply: ") + std::string(fp8::profile_names()))
        ->capture_default_str();
    cmd.add_option("--bound", o.bound, "clamp non-NaN inputs to [-B, B] first, as vLLM does (e.g. 448, 240, 224)");
  }
}

// VALUEs are taken as the subcommand's leftover arguments, in order, so that "-inf" and "-nan"
// (which CLI11 would take for flags) work without quoting tricks; parse_value rejects junk.
void take_values(CLI::App& cmd) {
  cmd.allow_extras();
  cmd.footer("VALUE...: decimal or hex-float values, inf, nan, -inf, -nan (one result per value, in order)");
}

void run_convert(const fp8_options& o, const std::string& in, const std::string& out_path, bool decode) {
  const fp8::conversion c = parse_conversion(o);
  const std::array<io::named_input, 1> inputs{{{"--in", in}}};
  const io::output_file out = io::resolve_output_file("--out", out_path, inputs);
  const activity::scope doing(fmt::format("fp8 convert --in {}", in));
  if (decode) {
    const xt::xarray<std::uint8_t> codes = io::read_npy<std::uint8_t>(in);
    const fp8::format_traits& t = fp8::traits(c.fmt);
    for (std::size_t i = 0; i < codes.size(); ++i)
      if (!fp8::is_code(t, codes.data()[i]))
        throw input_error(fmt::format("{}: element {} is {}, not {} code (accepted: {}, one code per byte)", in, i,
                                      codes.data()[i], fmt::format("an {}", t.name), accepted_codes(t)));
    xt::xarray<float> values = xt::xarray<float>::from_shape(codes.shape());
    fp8::decode(c.fmt, c.profile, {codes.data(), codes.size()}, {values.data(), values.size()});
    io::write_npy(out, values);
    return;
  }
  const io::npy_header header = io::read_npy_header(in);
  if (header.shape.size() != 1)
    throw input_error(fmt::format("{}: expected a 1-D float32 or float64 array, found {}", in, io::describe(header)));
  xt::xarray<std::uint8_t> codes;
  if (header.typestring == "<f8") {
    const xt::xarray<double> values = io::read_npy<double>(in);
    codes = xt::xarray<std::uint8_t>::from_shape(values.shape());
    fp8::encode(c, {values.data(), values.size()}, {codes.data(), codes.size()});
  } else if (header.typestring == "<f4") {
    const xt::xarray<float> values = io::read_npy<float>(in);
    codes = xt::xarray<std::uint8_t>::from_shape(values.shape());
    fp8::encode(c, {values.data(), values.size()}, {codes.data(), codes.size()});
  } else {
    throw input_error(fmt::format("{}: expected a 1-D float32 or float64 array, found {}", in, io::describe(header)));
  }
  io::write_npy(out, codes);
}

}  // namespace

void add_fp8_commands(CLI::App& app) {
  CLI::App* fp8_cmd = app.add_subcommand("fp8", "fp8 formats and conversion profiles");
  fp8_cmd->require_subcommand(1);

  {
    auto o = std::make_shared<fp8_options>();
    auto codes = std::make_shared<std::vector<std::string>>();
    CLI::App* cmd = fp8_cmd->add_subcommand("decode", "exact value of each code, one per line");
    add_conversion_flags(*cmd, *o, false);
    cmd->add_option("CODE", *codes, "codes as 0xNN or decimal")->required();
    cmd->callback([o, codes] {
      const fp8::format f = parse_format(o->format);
      std::vector<std::uint8_t> parsed;
      for (const auto& text : *codes) parsed.push_back(parse_code(text, fp8::traits(f)));
      for (const std::uint8_t code : parsed) fmt::print("{}\n", value_text(fp8::decode(f, code)));
    });
  }
  {
    auto o = std::make_shared<fp8_options>();
    CLI::App* cmd = fp8_cmd->add_subcommand(
        "encode", "code of each value under a profile, one 0xNN per line (values are float64: converted as the "
                  "profile's producer converts a float64; ml_dtypes and torch round to float32 first)");
    add_conversion_flags(*cmd, *o, true);
    take_values(*cmd);
    cmd->callback([o, cmd] {
      const fp8::conversion c = parse_conversion(*o);
      const std::vector<std::string> values = cmd->remaining();
      std::vector<double> parsed;
      if (values.empty()) throw input_error("no VALUE given (accepted: decimal, hex float, inf, nan, -inf, ...)");
      for (const auto& text : values) parsed.push_back(parse_value(text));
      for (const double v : parsed) fmt::print("{}\n", code_text(fp8::traits(c.fmt), fp8::encode(c, v)));
    });
  }
  {
    auto o = std::make_shared<fp8_options>();
    CLI::App* cmd = fp8_cmd->add_subcommand("table", "every code (256; 16 for e2m1fn): bits, value and class");
    add_conversion_flags(*cmd, *o, false);
    cmd->callback([o] {
      const fp8::format f = parse_format(o->format);
      const auto& t = fp8::traits(f);
      fmt::print("code  bits         value  class\n");
      for (unsigned code = 0; code < fp8::code_count(t); ++code) {
        const auto c = static_cast<std::uint8_t>(code);
        fmt::print("{:<4}  {:<11}  {:>14}  {}\n", code_text(t, c), bits_of(t, c), value_text(fp8::decode(f, c)),
                   fp8::to_string(fp8::classify(t, c)));
      }
    });
  }
  {
    auto o = std::make_shared<fp8_options>();
    auto in = std::make_shared<std::string>();
    auto out = std::make_shared<std::string>();
    auto decode = std::make_shared<bool>(false);
    CLI::App* cmd = fp8_cmd->add_subcommand(
        "convert", "float32/float64 .npy -> uint8 codes .npy, one code per byte (or, with --decode, codes -> float32)");
    add_conversion_flags(*cmd, *o, true);
    cmd->add_option("--in", *in, "input .npy")->required();
    cmd->add_option("--out", *out, "output .npy (written only when the whole conversion succeeds)")->required();
    cmd->add_flag("--decode", *decode, "uint8 codes -> float32 values");
    cmd->callback([o, in, out, decode] { run_convert(*o, *in, *out, *decode); });
  }
  {
    auto o = std::make_shared<fp8_options>();
    CLI::App* cmd = fp8_cmd->add_subcommand("compare", "each value under every profile that covers the format");
    add_conversion_flags(*cmd, *o, false);
    take_values(*cmd);
    cmd->callback([o, cmd] {
      const fp8::format f = parse_format(o->format);
      const std::vector<std::string> values = cmd->remaining();
      std::vector<double> parsed;
      if (values.empty()) throw input_error("no VALUE given (accepted: decimal, hex float, inf, nan, -inf, ...)");
      for (const auto& text : values) parsed.push_back(parse_value(text));
      fmt::print("{:>14}", "value");
      for (const auto& p : fp8::all_profiles())
        if (fp8::covers(p, f)) fmt::print("  {:>14}", p.name);
      fmt::print("\n");
      for (const double v : parsed) {
        fmt::print("{:>14}", value_text(v));
        for (const auto& p : fp8::all_profiles()) {
          if (!fp8::covers(p, f)) continue;
          const std::uint8_t code = fp8::encode(fp8::conversion{f, p.id, std::nullopt}, v);
          fmt::print("  {:>14}", fmt::format("{} ({})", code_text(fp8::traits(f), code), value_text(fp8::decode(f, code))));
        }
        fmt::print("\n");
      }
    });
  }
}

}  // namespace mqa::cli
