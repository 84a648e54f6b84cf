// OpenBLAS's thread count is process-wide; blas_single_threaded (reference/exact/dots.hpp) holds it
// at 1 while any holder lives, on any thread, and the last holder restores what the first found.
#include <catch2/catch.hpp>
#include <cblas.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "reference/exact/dots.hpp"

using mqa::exact::detail::blas_single_threaded;

TEST_CASE("overlapping holders on two threads keep OpenBLAS at one thread, then restore it", "[reference][blas]") {
  const int before = openblas_get_num_threads();
  openblas_set_num_threads(3);
  std::mutex m;
  std::condition_variable cv;
  int stage = 0;  // 1: the worker holds; 2: the main thread released its own; 3: the worker released
  int seen_by_worker_after_main_released = -1;
  {
    auto main_holder = std::make_unique<blas_single_threaded>();
    CHECK(openblas_get_num_threads() == 1);
    std::thread worker([&] {
      blas_single_threaded held;
      {
        std::unique_lock lock(m);
        stage = 1;
        cv.notify_all();
        cv.wait(lock, [&] { return stage == 2; });
      }
      // The main thread's holder is gone, this one is not: still one thread.
      seen_by_worker_after_main_released = openblas_get_num_threads();
    });
    {
      std::unique_lock lock(m);
      cv.wait(lock, [&] { return stage == 1; });
    }
    main_holder.reset();
    {
      std::lock_guard lock(m);
      stage = 2;
    }
    cv.notify_all();
    worker.join();
  }
  CHECK(seen_by_worker_after_main_released == 1);
  CHECK(openblas_get_num_threads() == 3);  // what the first holder found
  openblas_set_num_threads(before);
}
