// Work cut into independent pieces and done on every core: for_each_piece(pieces, work) calls
// work(piece) once for each piece in [0, pieces), on up to one thread a core (the calling thread
// among them), each thread taking the next piece no other has taken (so `work` runs on several
// threads at once). It returns once every piece
// is done. Where a piece throws, the pieces not yet taken are skipped and the first exception is
// rethrown here, after every thread has stopped. The pieces' order is not fixed: a result must not
// depend on it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace mqa {

template <class Work>
void for_each_piece(std::int64_t pieces, Work&& work) {
  if (pieces <= 0) return;
  std::atomic<std::int64_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto take = [&] {
    try {
      for (std::int64_t piece = next++; piece < pieces; piece = next++) work(piece);
    } catch (...) {
      const std::lock_guard lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next = pieces;
    }
  };
  const auto threads = std::clamp<std::int64_t>(std::thread::hardware_concurrency(), 1, pieces);
  {
    std::vector<std::jthread> pool;
    for (std::int64_t t = 1; t < threads; ++t) pool.emplace_back(take);
    take();
  }  // joined
  if (failure) std::rethrow_exception(failure);
}

}  // namespace mqa
