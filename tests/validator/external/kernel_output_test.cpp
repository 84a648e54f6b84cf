// The output file of an external kernel: written poisoned at the padded stride, read back with
// every check a lying adapter needs (dtype, rank, rows, columns, a file that is not .npy, a link, a
// pipe, a stride too wide to read, a change after it was read); the scratch folder's own folders
// are reached through descriptors, whatever an adapter does to their paths.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <filesystem>
#include <fstream>
#include <xtensor/xarray.hpp>

#include "validator/compare/comparator.hpp"
#include "validator/external/kernel_output.hpp"
#include "validator/external/scratch.hpp"
#include "validator/input_error.hpp"
#include "validator/io/npy.hpp"
#include "validator/runner/runner.hpp"
#include <fmt/core.h>

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

TEST_CASE("an output that is a link, a pipe or too wide is refused before anything is read", "[external]") {
  const external::scratch_folder scratch(1 << 20);
  const fs::path file = scratch.path() / "out.npy";
  SECTION("a link to a file holding a correct output") {
    const fs::path elsewhere = scratch.path() / "elsewhere.npy";
    io::write_npy(elsewhere, xt::xarray<float>(xt::xarray<float>::from_shape({4, 40})));
    fs::create_symlink(elsewhere, file);
    CHECK_THROWS_WITH(external::read_kernel_output(file, 4, 40), Catch::Contains("is a symbolic link"));
  }
  SECTION("a pipe (a read would block)") {
    REQUIRE(::mkfifo(file.c_str(), 0600) == 0);
    CHECK_THROWS_WITH(external::read_kernel_output(file, 4, 40), Catch::Contains("is not a regular file"));
  }
  SECTION("a header claiming rows far wider than the case: refused by its header, never allocated") {
    const std::int64_t n = 40, widest = external::max_output_stride(n);
    CHECK(widest == 2 * runner::padded_stride(n) + 4096);
    io::write_npy(file, xt::xarray<float>(xt::xarray<float>::from_shape({4, static_cast<std::size_t>(widest)})));
    CHECK(external::read_kernel_output(file, 4, n).stride == widest);
    // A sparse file of 4 x 2^40 floats: its header says so, its blocks do not exist.
    const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 1099511627776), }";
    std::string padded = header + std::string(118 - header.size() - 1, ' ') + "\n";  // 10 + 118 bytes: aligned to 64
    {
      std::ofstream out(file, std::ios::binary | std::ios::trunc);
      out << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(padded.size()) << '\x00' << padded;
    }
    fs::resize_file(file, 128 + (std::uintmax_t{4} << 40) * 4);
    CHECK_THROWS_WITH(external::read_kernel_output(file, 4, n),
                      Catch::Contains(fmt::format("S <= {}", widest)) && Catch::Contains("not read"));
  }
  SECTION("bytes past the data") {
    io::write_npy(file, xt::xarray<float>(xt::xarray<float>::from_shape({4, 40})));
    fs::resize_file(file, fs::file_size(file) + (1 << 20));
    CHECK_THROWS_AS(external::read_kernel_output(file, 4, 40), input_error);
  }
}

TEST_CASE("an adapter's top-k indices are read through the folder mqacheck made, never through a link",
          "[external][topk-indices]") {
  const external::scratch_folder scratch(1 << 20);
  external::anchored_folder outputs = scratch.make_folder("001-case.outputs");
  const fs::path shown = outputs.path() / "launch-1.topk.npy";
  xt::xarray<std::int64_t> indices = xt::xarray<std::int64_t>::from_shape({3, 4});
  indices.fill(-1);
  io::write_npy(shown, indices);
  CHECK(external::read_kernel_indices(outputs.anchored("launch-1.topk.npy"), 3, 4, shown).k == 4);
  SECTION("a link to a file holding correct indices") {
    const fs::path elsewhere = scratch.path() / "elsewhere.npy";
    io::write_npy(elsewhere, indices);
    fs::remove(shown);
    fs::create_symlink(elsewhere, shown);
    CHECK_THROWS_WITH(external::read_kernel_indices(outputs.anchored("launch-1.topk.npy"), 3, 4, shown),
                      Catch::Contains(shown.string() + ": is a symbolic link"));
  }
  SECTION("the folder's path moved away and replaced by a link to another folder holding indices") {
    const fs::path other = scratch.path() / "other";
    fs::create_directory(other);
    xt::xarray<std::int64_t> planted = xt::xarray<std::int64_t>::from_shape({3, 4});
    planted.fill(0);
    io::write_npy(other / "launch-1.topk.npy", planted);
    fs::rename(outputs.path(), scratch.path() / "moved");
    fs::create_directory_symlink(other, outputs.path());
    // The folder mqacheck made is still the one read: its -1 entries, not the planted zeros.
    const compare::read_indices read = external::read_kernel_indices(outputs.anchored("launch-1.topk.npy"), 3, 4, shown);
    CHECK(read.values == std::vector<std::int64_t>(12, -1));
    fs::remove(outputs.path());
    fs::rename(scratch.path() / "moved", outputs.path());
  }
  SECTION("bytes past the data, or a dtype not accepted, named by the path the adapter was given") {
    fs::resize_file(shown, fs::file_size(shown) + (1 << 20));
    CHECK_THROWS_WITH(external::read_kernel_indices(outputs.anchored("launch-1.topk.npy"), 3, 4, shown),
                      Catch::Contains(shown.string() + ": holds"));
    io::write_npy(shown, xt::xarray<float>(xt::xarray<float>::from_shape({3, 4})));
    CHECK_THROWS_WITH(external::read_kernel_indices(outputs.anchored("launch-1.topk.npy"), 3, 4, shown),
                      Catch::StartsWith(shown.string() + ": top-k indices must be int32 or int64"));
  }
  scratch.remove(outputs);
}

TEST_CASE("an output read is proven unchanged only while it holds the same bytes", "[external]") {
  const external::scratch_folder scratch(1 << 20);
  const fs::path file = scratch.path() / "out.npy";
  xt::xarray<float> values = xt::xarray<float>::from_shape({4, 64});
  values.fill(1.5f);
  io::write_npy(file, values);
  const external::kernel_output judged = external::read_kernel_output(file, 4, 40);
  CHECK_FALSE(external::changed_since_read(file, judged, kernels::logits_precision::fp32));
  SECTION("one element rewritten in place") {
    values(3, 63) = 2.5f;
    io::write_npy(file, values);
    CHECK(*external::changed_since_read(file, judged, kernels::logits_precision::fp32) ==
          "its values differ from those judged");
  }
  SECTION("replaced by a wider file") {
    io::write_npy(file, xt::xarray<float>(xt::xarray<float>::from_shape({4, 128})));
    CHECK_THAT(*external::changed_since_read(file, judged, kernels::logits_precision::fp32),
               Catch::Contains("row stride is now 128"));
  }
  SECTION("removed") {
    fs::remove(file);
    CHECK(external::changed_since_read(file, judged, kernels::logits_precision::fp32));
  }
}

TEST_CASE("a folder of the scratch folder is reached by its descriptor, whatever lies at its path", "[external]") {
  const external::scratch_folder scratch(1 << 20);
  const fs::path victim = scratch.path() / "victim";
  fs::create_directory(victim);
  external::anchored_folder inputs = scratch.make_folder("001-case.inputs");
  CHECK(inputs.path().parent_path() == scratch.path());
  CHECK(inputs.path().filename().string().starts_with("001-case.inputs-"));
  SECTION("moved away and replaced by a link: mqacheck's writes still land in its own folder") {
    const fs::path moved = scratch.path() / "moved";
    fs::rename(inputs.path(), moved);
    fs::create_directory_symlink(victim, inputs.path());
    external::write_poisoned_output(inputs.anchored("launch-1.npy"), 2, 64, kernels::logits_precision::fp32,
                                    inputs.path() / "launch-1.npy");
    CHECK(fs::exists(moved / "launch-1.npy"));
    CHECK(fs::is_empty(victim));
  }
  SECTION("a link planted at a temporary's name makes the write fail, not follow it") {
    const fs::path precious = victim / "precious.txt";
    std::ofstream(precious) << "keep";
    for (int count = 0; count < 2000; ++count)
      fs::create_symlink(precious, inputs.path() / fmt::format(".launch-1.npy.{}-{}.partial", ::getpid(), count));
    CHECK_THROWS_AS(external::write_poisoned_output(inputs.anchored("launch-1.npy"), 2, 64,
                                                    kernels::logits_precision::fp32, inputs.path() / "launch-1.npy"),
                    input_error);
    CHECK(fs::file_size(precious) == 4);
  }
  SECTION("removal takes what an adapter added, links removed and never followed") {
    std::ofstream(victim / "precious.txt") << "keep";
    fs::create_directory_symlink(victim, inputs.path() / "link-to-victim");
    std::ofstream(inputs.path() / "added.npy") << "x";
    const fs::path path = inputs.path();
    scratch.remove(inputs);
    CHECK_FALSE(fs::exists(path));
    CHECK(fs::file_size(victim / "precious.txt") == 4);
  }
}
