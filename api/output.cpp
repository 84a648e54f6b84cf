#include "output.hpp"

#include <fmt/core.h>

#include <cmath>
#include <cstring>

#include "reference/fp8.hpp"
#include "validator/compare/columns.hpp"
#include "validator/input_error.hpp"

namespace mqa::api {
namespace {

// Columns the contract needs at least: n, or the longest window with relative columns.
std::int64_t needed_width(const exact::problem& p, const kernels::contract& c) {
  return c.columns == kernels::columns_layout::relative ? compare::relative_width(p) : p.n;
}

std::string expected_shape(const exact::problem& p, const kernels::contract& c, std::int64_t width) {
  const bool bf16 = c.logits == bounds::logits_precision::bf16;
  return fmt::format("{} [{}, S] with S >= {} ({})", bf16 ? "bfloat16" : "float32", p.m, width,
                     c.columns == kernels::columns_layout::relative
                         ? "the bundle's m and its longest window: --columns relative"
                         : "the bundle's m and n");
}

// A relative output becomes the absolute image; an absolute one keeps its values.
void to_absolute(judged_output& out, const exact::problem& p, const kernels::contract& c, std::int64_t width) {
  if (c.columns != kernels::columns_layout::relative) return;
  out.values = compare::absolute_from_relative({out.values.data(), p.m, width, out.stride}, p, -INFINITY);
  out.stride = p.n;
}

}  // namespace

judged_output read_judged_output(const std::string& path, const exact::problem& p, const kernels::contract& c) {
  const bool relative = c.columns == kernels::columns_layout::relative;
  const bool bf16 = c.logits == bounds::logits_precision::bf16;
  const std::int64_t width = needed_width(p, c);
  const io::npy_header header = io::read_npy_header(path);
  const bool dtype_ok = bf16 ? io::is_bfloat16_typestring(header.typestring) : header.typestring == "<f4";
  if (!dtype_ok || header.shape.size() != 2 || static_cast<std::int64_t>(header.shape[0]) != p.m ||
      static_cast<std::int64_t>(header.shape[1]) < width)
    throw input_error(fmt::format("{}: expected {}{}, found {}", path, expected_shape(p, c, width),
                                  bf16 ? ": uint16 bfloat16 bits or ml_dtypes' bfloat16 (np.save writes '<V2')"
                                       : " (a bfloat16 output needs --logits-dtype bf16)",
                                  io::describe(header)));
  judged_output out;
  out.m = p.m, out.n = p.n, out.stride = static_cast<std::int64_t>(header.shape[1]);
  if (bf16) {
    const xt::xarray<float> widened = io::read_bfloat16_npy(path);
    out.values.assign(widened.begin(), widened.end());
  } else if (!relative && io::mapped_floats::mappable(header) && (out.mapped = io::mapped_floats::map(path))) {
    // mapped: its pages are read as the comparator judges them
  } else {
    out.values = io::read_npy_vector<float>(path);
  }
  to_absolute(out, p, c, width);
  return out;
}

void check_output_array(const output_array& a, const std::string& shown, const exact::problem& p,
                        const kernels::contract& c) {
  const bool bf16 = c.logits == bounds::logits_precision::bf16;
  const std::int64_t width = needed_width(p, c);
  const auto wanted = bf16 ? output_array::element::bfloat16 : output_array::element::float32;
  // (An array of no elements may have no data: an empty tensor's.)
  if ((a.data == nullptr && a.rows > 0 && a.cols > 0) || a.type != wanted || a.rows != p.m || a.cols < width ||
      a.row_stride < a.cols)
    throw input_error(fmt::format("{}: expected {}{}, found {} [{}, {}] with rows {} elements apart", shown,
                                  expected_shape(p, c, width),
                                  bf16 ? "" : " (a bfloat16 output needs --logits-dtype bf16)",
                                  a.type == output_array::element::bfloat16 ? "bfloat16" : "float32", a.rows, a.cols,
                                  a.row_stride));
}

judged_output judged_from_memory(const output_array& a, const std::string& shown, const exact::problem& p,
                                 const kernels::contract& c) {
  check_output_array(a, shown, p, c);
  const bool bf16 = c.logits == bounds::logits_precision::bf16;
  const std::int64_t width = needed_width(p, c);
  judged_output out;
  out.m = p.m, out.n = p.n, out.stride = a.row_stride;
  if (!bf16 && c.columns == kernels::columns_layout::absolute) {
    out.borrowed = static_cast<float*>(a.data);
    return out;
  }
  // Widened (bfloat16) or copied (relative columns are remapped anyway) into [m, cols].
  out.values.resize(static_cast<std::size_t>(a.rows * a.cols));
  for (std::int64_t i = 0; i < a.rows; ++i) {
    float* row = out.values.data() + i * a.cols;
    if (bf16) {
      const auto* bits = static_cast<const std::uint16_t*>(a.data) + i * a.row_stride;
      for (std::int64_t j = 0; j < a.cols; ++j) row[j] = fp8::bfloat16_value(bits[j]);
    } else {
      std::memcpy(row, static_cast<const float*>(a.data) + i * a.row_stride, static_cast<std::size_t>(a.cols) * sizeof(float));
    }
  }
  out.stride = a.cols;
  to_absolute(out, p, c, width);
  return out;
}

}  // namespace mqa::api
