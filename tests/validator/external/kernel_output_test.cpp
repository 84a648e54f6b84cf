// The output file of an external kernel: written poisoned at the padded stride, read back with
// every check a lying adapter needs (dtype, rank, rows, columns, a file that is not .npy).
#include <catch2/catch.hpp>

#include <bit>
#include <filesystem>
#include <fstream>
#include <xtensor/xarray.hpp>

#include "validator/compare/comparator.hpp"
#include "validator/external/kernel_output.hpp"
#include "validator/external/scratch.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"

using namespace mqa;
namespace fs = std::filesystem;

TEST_CASE("the output file starts as poison at the padded stride", "[external]") {
  const external::scratch_folder scratch(1 << 20);
  const fs::path file = scratch.path() / "out.npy";
  external::write_poisoned_output(file, 3, 128);
  external::kernel_output out = external::read_kernel_output(file, 3, 40);
  CHECK(out.stride == 128);
  REQUIRE(out.values.size() == 3 * 128);
  for (const float x : out.values) CHECK(std::bit_cast<std::uint32_t>(x) == compare::kPoisonBits);
  const kernels::output_view v = out.view();
  CHECK((v.m == 3 && v.n == 40 && v.stride == 128));
}

TEST_CASE("an output that is not float32 [m, S >= n] is refused with what it holds", "[external]") {
  const external::scratch_folder scratch(1 << 20);
  const fs::path file = scratch.path() / "out.npy";
  SECTION("[m, n] exactly is accepted: a kernel that allocates its own output") {
    io::write_npy(file, xt::xarray<float>(xt::xarray<float>::from_shape({4, 40})));
    CHECK(external::read_kernel_output(file, 4, 40).stride == 40);
  }
  const auto [shape, dtype_double, words] = GENERATE(table<std::vector<std::size_t>, bool, std::string>({
      {{3, 40}, false, "found float32 [3, 40]"},
      {{4, 39}, false, "found float32 [4, 39]"},
      {{4, 40, 1}, false, "found float32 [4, 40, 1]"},
      {{160}, false, "found float32 [160]"},
      {{4, 40}, true, "found float64 [4, 40]"},
  }));
  CAPTURE(shape, words);
  if (dtype_double)
    io::write_npy(file, xt::xarray<double>(xt::xarray<double>::from_shape(shape)));
  else
    io::write_npy(file, xt::xarray<float>(xt::xarray<float>::from_shape(shape)));
  try {
    external::read_kernel_output(file, 4, 40);
    FAIL("accepted");
  } catch (const input_error& e) {
    const std::string message = e.what();
    CHECK(message.find(file.string()) == 0);
    CHECK(message.find("expected float32 [4, S] with S >= 40") != std::string::npos);
    CHECK(message.find(words) != std::string::npos);
  }
}

TEST_CASE("a missing or mangled output file is an input error, not a crash", "[external]") {
  const external::scratch_folder scratch(1 << 20);
  const fs::path file = scratch.path() / "out.npy";
  CHECK_THROWS_AS(external::read_kernel_output(file, 4, 40), input_error);
  std::ofstream(file) << "not an npy file";
  CHECK_THROWS_WITH(external::read_kernel_output(file, 4, 40), Catch::Contains("not an .npy file"));
}

TEST_CASE("the scratch folder is private and goes with its owner", "[external]") {
  fs::path path;
  {
    const external::scratch_folder scratch(1 << 20);
    path = scratch.path();
    CHECK(path.is_absolute());
    CHECK(fs::status(path).permissions() == fs::perms::owner_all);
    std::ofstream(path / "left-behind.npy") << "x";
    fs::create_directory(path / "001-case");
  }
  CHECK_FALSE(fs::exists(path));
}
