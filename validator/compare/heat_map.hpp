// A picture of one judged output over (row, key), small enough to keep with every result and to
// draw (reports/html.hpp): the output is cut into at most kMaxCells x kMaxCells cells and each cell
// keeps the worst of what fell into it (max-pooled error/bound, summed counts), so that a bug
// shaped like a tile, a band of rows or a diagonal is seen at a glance at any shape.
//
// Geometry: rows = min(m, kMaxCells), cols = min(n, kMaxCells); element (i, j) falls into cell
// (i * rows / m, j * cols / n) (integer division), so cell r covers rows
// [ceil(r * m / rows), ceil((r + 1) * m / rows)): every cell holds at least one row and one key,
// and cell sizes differ by at most one. Recording is O(1) per element; the comparator walks keys
// in order and steps to the next column of cells at column_end().
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mqa::compare {

struct heat_map {
  static constexpr std::int64_t kMaxCells = 128;

  std::int64_t m = 0, n = 0;        // the output's rows and keys
  std::int64_t rows = 0, cols = 0;  // cells; 0 x 0 when nothing was judged
  // Per cell, row-major. The largest |error| / bound over the cell's compared pairs; kNone where no
  // finite pair was compared (outside every window, rows not judged, only NaN).
  std::vector<double> error_over_bound;
  std::vector<std::int64_t> mask_mismatches;  // mask-leak and mask-hole elements (mask-shift is made of them)
  std::vector<std::int64_t> unwritten;        // elements that kept the runner's poison value
  std::vector<std::int64_t> nonfinite;        // NaN or +-inf where the exact value is a number (nan, inf)

  static constexpr double kNone = -1;

  heat_map() = default;
  heat_map(std::int64_t m, std::int64_t n);

  bool empty() const { return rows == 0 || cols == 0; }
  std::int64_t cell_row(std::int64_t i) const { return m ? i * rows / m : 0; }
  std::int64_t cell_col(std::int64_t j) const { return n ? j * cols / n : 0; }
  // The first row (key) of cell row (column) r: ceil(r * m / rows).
  std::int64_t row_begin(std::int64_t r) const { return rows ? (r * m + rows - 1) / rows : 0; }
  std::int64_t column_begin(std::int64_t c) const { return cols ? (c * n + cols - 1) / cols : 0; }
  std::int64_t column_end(std::int64_t c) const { return column_begin(c + 1); }
  std::size_t cell(std::int64_t r, std::int64_t c) const { return static_cast<std::size_t>(r * cols + c); }
  std::size_t cell_of(std::int64_t i, std::int64_t j) const { return cell(cell_row(i), cell_col(j)); }

  void add_error(std::size_t at, double ratio) {
    if (ratio > error_over_bound[at]) error_over_bound[at] = ratio;
  }
  // Cells of the same geometry: max of the ratios, sums of the counts. An empty map takes `other`.
  void merge(const heat_map& other);
};

}  // namespace mqa::compare
