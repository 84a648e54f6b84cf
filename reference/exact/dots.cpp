#include "dots.hpp"

#include <cblas.h>

#include <algorithm>
#include <mutex>

namespace mqa::exact::detail {

void gemm_abt(const double* a, const double* b, double* c, std::int64_t rows, std::int64_t cols,
              std::int64_t depth) {
  if (rows == 0 || cols == 0) return;
  if (depth == 0) {  // BLAS wants lda >= 1; the empty sum is 0
    std::fill(c, c + rows * cols, 0.0);
    return;
  }
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(rows), static_cast<blasint>(cols),
              static_cast<blasint>(depth), 1.0, a, static_cast<blasint>(depth), b, static_cast<blasint>(depth), 0.0, c,
              static_cast<blasint>(cols));
}

void int128_abt(const std::int64_t* a, const std::int64_t* b, double* hi, double* lo, std::int64_t rows,
                std::int64_t cols, std::int64_t depth, const double* a_unit, const double* b_unit) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const std::int64_t* ar = a + r * depth;
    for (std::int64_t j = 0; j < cols; ++j) {
      const std::int64_t* bj = b + j * depth;
      __int128 sum = 0;
      for (std::int64_t d = 0; d < depth; ++d) sum += static_cast<__int128>(ar[d]) * bj[d];
      // hi = RN(sum); the remainder is below ulp(hi) / 2 <= 2^46, so it converts exactly.
      const auto h = static_cast<double>(sum);
      const auto l = static_cast<double>(sum - static_cast<__int128>(h));
      const double unit = a_unit[r] * b_unit[j];  // powers of two: exact
      hi[r * cols + j] = h * unit;                 // scaling by a power of two >= 2^-42: exact
      lo[r * cols + j] = l * unit;
    }
  }
}

namespace {

struct blas_holders {
  std::mutex lock;
  int count = 0;     // blas_single_threaded objects alive
  int previous = 0;  // the thread count the first of them found
};

blas_holders& holders() {
  static blas_holders h;
  return h;
}

}  // namespace

blas_single_threaded::blas_single_threaded() {
  blas_holders& h = holders();
  const std::lock_guard guard(h.lock);
  if (h.count++ == 0) {
    h.previous = openblas_get_num_threads();
    openblas_set_num_threads(1);
  }
}

blas_single_threaded::~blas_single_threaded() {
  blas_holders& h = holders();
  const std::lock_guard guard(h.lock);
  if (--h.count == 0) openblas_set_num_threads(h.previous);
}

}  // namespace mqa::exact::detail
