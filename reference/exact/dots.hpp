// Blocks of dot products: rows of a (one per query head, or one per query row for the magnitude)
// against rows of b (one per key), both [., depth] row-major.
#pragma once

#include <boost/core/noncopyable.hpp>

#include <cstdint>

namespace mqa::exact::detail {

// c[r, j] = sum_d a[r, d] * b[j, d] by OpenBLAS dgemm (c has row stride cols). Exact when every
// partial sum of every order is an integer multiple of one unit below 2^53 units (codes.hpp):
// each is then a float64, so no operation of any summation order or blocking rounds.
void gemm_abt(const double* a, const double* b, double* c, std::int64_t rows, std::int64_t cols,
              std::int64_t depth);

// The same in integer units, accumulated exactly in int128 and returned as the float64 pair
// hi + lo = sum * a_unit[r] * b_unit[j] (exact: |sum| < 2^100, see codes.hpp, and the units are
// powers of two whose product is >= 2^-42: a row's and a key's own units, which block scales move).
void int128_abt(const std::int64_t* a, const std::int64_t* b, double* hi, double* lo, std::int64_t rows,
                std::int64_t cols, std::int64_t depth, const double* a_unit, const double* b_unit);

// Runs OpenBLAS single-threaded while it lives (our own threads split the work), then restores
// its thread count. The setting is process-wide, and compute() may run on two threads at once (a
// CPU variant launched while another output is diagnosed): the first of overlapping holders sets
// it, the last restores it, counted under a lock.
class blas_single_threaded : boost::noncopyable {
 public:
  blas_single_threaded();
  ~blas_single_threaded();
};

}  // namespace mqa::exact::detail
