#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <xtensor/xnpy.hpp>

#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"

namespace fs = std::filesystem;

namespace {

struct scratch_dir {
  fs::path path = fs::temp_directory_path() / ("mqa_npy_test_" + std::to_string(::getpid()));
  scratch_dir() { fs::create_directories(path); }
  ~scratch_dir() { fs::remove_all(path); }
};

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
  scratch_dir dir;
  const xt::xarray<float> a = {{1.0f, -2.5f, 3.0f}, {0.0f, 1e-30f, -0.0f}};
  io::write_npy(dir.path / "a.npy", a);
  CHECK((io::read_npy<float>(dir.path / "a.npy") == a));
  const auto header = io::read_npy_header(dir.path / "a.npy");
  CHECK(io::describe(header) == "float32 [2, 3]");
  CHECK_FALSE(fs::exists(dir.path / ".a.npy.partial"));
}

TEST_CASE("every malformed npy file is one input_error naming the file and what is accepted", "[io]") {
  scratch_dir dir;
  const fs::path f = dir.path / "bad.npy";
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
  scratch_dir dir;
  io::write_npy(dir.path / "u8.npy", xt::xarray<std::uint8_t>{1, 2, 3});
  CHECK_THROWS_WITH(io::read_npy<float>(dir.path / "u8.npy"), Catch::Contains("dtype is uint8, expected float32"));
  CHECK_THROWS_WITH(io::read_npy<float>(dir.path / "missing.npy"), Catch::Contains("no such file"));
}

TEST_CASE("Fortran-ordered arrays are read back in row-major order", "[io]") {
  scratch_dir dir;
  // numpy.asfortranarray([[1, 2, 3], [4, 5, 6]], dtype=float32) stores 1 4 2 5 3 6.
  std::string data;
  for (float v : {1.0f, 4.0f, 2.0f, 5.0f, 3.0f, 6.0f}) data.append(reinterpret_cast<const char*>(&v), 4);
  write_bytes(dir.path / "f.npy", npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", data));
  const auto a = io::read_npy<float>(dir.path / "f.npy");
  CHECK((a == xt::xarray<float>{{1, 2, 3}, {4, 5, 6}}));
  CHECK(a.data()[1] == 2.0f);
}
