#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <xtensor/xnpy.hpp>

#include "validator/input_error.hpp"
#include "support/scratch_dir.hpp"
#include "validator/io/npy.hpp"

namespace fs = std::filesystem;

namespace {

void write_bytes(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

std::string npy_bytes(const std::string& dict, const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

}  // namespace

namespace io = mqa::io;

TEST_CASE("npy arrays round-trip through write_npy and read_npy", "[io]") {
  const mqa::test::scratch_dir dir("npy-1");
  const xt::xarray<float> a = {{1.0f, -2.5f, 3.0f}, {0.0f, 1e-30f, -0.0f}};
  io::write_npy(dir.root / "a.npy", a);
  CHECK((io::read_npy<float>(dir.root / "a.npy") == a));
  const auto header = io::read_npy_header(dir.root / "a.npy");
  CHECK(io::describe(header) == "float32 [2, 3]");
  CHECK_FALSE(fs::exists(dir.root / ".a.npy.partial"));
}

TEST_CASE("every malformed npy file is one input_error naming the file and what is accepted", "[io]") {
  const mqa::test::scratch_dir dir("npy-2");
  const fs::path f = dir.root / "bad.npy";
  const std::string four_floats(16, '\0');
  auto [bytes, message] = GENERATE_COPY(table<std::string, std::string>({
      {"", "shorter than the 8-byte preamble"},
      {"not a numpy file at all", "magic string"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", four_floats.substr(0, 10)),
       "truncated: float32 [4] holds 10 bytes of data, the header needs 16"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", four_floats + "xx"), "2 extra bytes"},
      {npy_bytes("{'descr': '<U8', 'fortran_order': False, 'shape': (4,), }", four_floats), "unsupported dtype '<U8'"},
      {npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", four_floats), "unsupported dtype '>f4' (accepted: uint8"},
      {npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4000000000000, 4000000000000), }", four_floats),
       "impossibly large"},
      {npy_bytes("{'descr': '<f4'", four_floats), "malformed .npy header"},
      {std::string("\x93NUMPY\x01\x00\xff\x00{", 11), "truncated .npy header"},
  }));
  CAPTURE(message);
  write_bytes(f, bytes);
  REQUIRE_THROWS_AS(io::read_npy<float>(f), mqa::input_error);
  try {
    io::read_npy<float>(f);
  } catch (const mqa::input_error& e) {
    CHECK_THAT(e.what(), Catch::Contains(f.string()) && Catch::Contains(message));
  }
}

TEST_CASE("a wrong dtype or a missing file names what was expected", "[io]") {
  const mqa::test::scratch_dir dir("npy-3");
  io::write_npy(dir.root / "u8.npy", xt::xarray<std::uint8_t>{1, 2, 3});
  CHECK_THROWS_WITH(io::read_npy<float>(dir.root / "u8.npy"), Catch::Contains("dtype is uint8, expected float32"));
  CHECK_THROWS_WITH(io::read_npy<float>(dir.root / "missing.npy"), Catch::Contains("no such file"));
}

TEST_CASE("Fortran-ordered arrays are read back in row-major order", "[io]") {
  const mqa::test::scratch_dir dir("npy-4");
  // numpy.asfortranarray([[1, 2, 3], [4, 5, 6]], dtype=float32) stores 1 4 2 5 3 6.
  std::string data;
  for (float v : {1.0f, 4.0f, 2.0f, 5.0f, 3.0f, 6.0f}) data.append(reinterpret_cast<const char*>(&v), 4);
  write_bytes(dir.root / "f.npy", npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", data));
  const auto a = io::read_npy<float>(dir.root / "f.npy");
  CHECK((a == xt::xarray<float>{{1, 2, 3}, {4, 5, 6}}));
  CHECK(a.data()[1] == 2.0f);
}

TEST_CASE("npy headers NumPy accepts are read in any key order, quoting and spacing", "[io][npy]") {
  auto [text, typestring, shape, fortran] = GENERATE(table<std::string, std::string, std::vector<std::size_t>, bool>({
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", "<f4", {3, 4}, false},
      {"{'shape': (3, 4), 'descr': '<f4', 'fortran_order': False}", "<f4", {3, 4}, false},
      {"{'fortran_order': True, 'shape': (48, 131,), 'descr': '|u1'}", "|u1", {48, 131}, true},
      {"{\"descr\": \"<i4\", \"fortran_order\": False, \"shape\": (5,)}", "<i4", {5}, false},
      {"{'descr':'<f8','fortran_order':False,'shape':()}", "<f8", {}, false},
      {"{ 'descr' : '<f4' ,\n 'fortran_order' :\tFalse , 'shape' : ( 0 , 7 ) , }", "<f4", {0, 7}, false},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (18446744073709551615,), }", "<f4",
       {18446744073709551615u}, false},
  }));
  CAPTURE(text);
  const mqa::io::npy_header h = mqa::io::parse_npy_header(text + "    \n");
  CHECK(h.typestring == typestring);
  CHECK(h.shape == shape);
  CHECK(h.fortran_order == fortran);
}

TEST_CASE("npy headers NumPy rejects are rejected, with what was expected where", "[io][npy]") {
  const std::string ok_descr = "'descr': '<f4'", ok_order = "'fortran_order': False";
  auto [text, message] = GENERATE_COPY(table<std::string, std::string>({
      // what xtensor's parser let through
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (48abc, 131xyz), }\n", "at character 54: expected ',' or ')' after an integer, found 'a'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (48.0, 131), }\n", "expected ',' or ')' after an integer, found '.'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (48 131), }\n", "expected ',' between integers, found '1'"},
      // not Python literals, or not of the types NumPy checks
      {"{" + ok_descr + ", " + ok_order + ", 'shape': [3, 4]}\n", "expected a tuple such as (3, 4)"},
      {"{" + ok_descr + ", " + ok_order + ", 'shape': (5)}\n", "a one-element tuple is written (5,)"},
      {"{" + ok_descr + ", " + ok_order + ", 'shape': (,)}\n", "expected a non-negative decimal integer, found ','"},
      {"{" + ok_descr + ", " + ok_order + ", 'shape': (-1,)}\n", "expected a non-negative decimal integer, found '-'"},
      {"{" + ok_descr + ", " + ok_order + ", 'shape': (3, 4,,)}\n", "expected a non-negative decimal integer, found ','"},
      {"{" + ok_descr + ", 'fortran_order': 0, 'shape': (3,)}\n", "expected True or False, found '0'"},
      {"{" + ok_descr + ", 'fortran_order': false, 'shape': (3,)}\n", "expected True or False, found 'f'"},
      {"{" + ok_descr + ", 'fortran_order': Falsey, 'shape': (3,)}\n", "expected True or False"},
      {"{'descr': <f4, " + ok_order + ", 'shape': (3,)}\n", "expected a string in quotes, found '<'"},
      {"{'descr': '<f4\\'', " + ok_order + ", 'shape': (3,)}\n", "expected the closing quote (no escapes or line breaks), found '\\'"},
      {"{'descr': '<f4\n", "expected the closing quote, found the end of the header"},
      {"{'descr': '<f4', " + ok_order + ", 'shape': (3,), 'shape': (3,)}\n", "key 'shape' given twice"},
      // the keys: exactly three, each once
      {"{" + ok_descr + ", " + ok_order + "}\n", "the key 'shape' is missing"},
      {"{" + ok_descr + ", " + ok_order + ", 'shape': (3,), 'extra': 1}\n", "unknown key 'extra'"},
      {"{" + ok_descr + ", " + ok_descr + ", " + ok_order + ", 'shape': (3,)}\n", "key 'descr' given twice"},
      {"{'descr' '<f4', " + ok_order + ", 'shape': (3,)}\n", "expected ':' after the key"},
      {"{" + ok_descr + " " + ok_order + ", 'shape': (3,)}\n", "expected ',' or '}' after a value"},
      // around the dict
      {"{" + ok_descr + ", " + ok_order + ", 'shape': (3,)}", "does not end with a line break"},
      {"{" + ok_descr + ", " + ok_order + ", 'shape': (3,)} x\n", "expected only spaces after the closing '}'"},
      {" {" + ok_descr + ", " + ok_order + ", 'shape': (3,)}\n", "expected '{' at the start of the header, found ' '"},
      {"{" + ok_descr + ", " + ok_order + ", 'shape': (18446744073709551616,)}\n", "expected an integer below 2^64"},
      {"{" + ok_descr + ", " + ok_order + ", 'shape': (3,)}" + std::string(10000, ' ') + "\n", "NumPy reads headers of at most 10000"},
  }));
  CAPTURE(text);
  CHECK_THROWS_WITH(mqa::io::parse_npy_header(text), Catch::Contains(message));
}

TEST_CASE("a reordered header and an unsupported dtype are judged like NumPy judges them", "[io][npy]") {
  const mqa::test::scratch_dir dir("npy-5");
  std::string data;
  for (float v : {1.0f, 2.0f, 3.0f, 4.0f}) data.append(reinterpret_cast<const char*>(&v), 4);
  write_bytes(dir.root / "reordered.npy", npy_bytes("{'shape': (2, 2), 'fortran_order': False, 'descr': '<f4'}", data));
  CHECK((io::read_npy<float>(dir.root / "reordered.npy") == xt::xarray<float>{{1, 2}, {3, 4}}));
  write_bytes(dir.root / "space.npy", npy_bytes("{'descr': ' <f4', 'fortran_order': False, 'shape': (4,), }", data));
  CHECK_THROWS_WITH(io::read_npy<float>(dir.root / "space.npy"), Catch::Contains("unsupported dtype ' <f4'"));
  write_bytes(
      dir.root / "v11.npy",
      "\x93NUMPY\x01\x01" + npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", data).substr(8));
  CHECK_THROWS_WITH(io::read_npy<float>(dir.root / "v11.npy"), Catch::Contains("unsupported .npy version 1.1"));
}

TEST_CASE("a folder or a FIFO given as an .npy file says what it is", "[io][npy]") {
  const mqa::test::scratch_dir dir("npy-6");
  REQUIRE(::mkfifo((dir.root / "fifo.npy").c_str(), 0600) == 0);
  CHECK_THROWS_WITH(io::read_npy<float>(dir.root),
                    dir.root.string() + ": is a folder, not a file (accepted: a regular .npy file)");
  CHECK_THROWS_WITH(
      io::read_npy<float>(dir.root / "fifo.npy"),
      (dir.root / "fifo.npy").string() + ": is a FIFO (named pipe), not a file (accepted: a regular .npy file)");
}
