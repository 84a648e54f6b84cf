// Pinned staging (staged_copy.hpp). A copy is split into chunks dealt round-robin to lanes; a lane
// is a host thread with its own stream and two pinned buffers, so that its memcpy into (or out of)
// one buffer overlaps the copy engine's transfer of the other. One copy at a time: the buffers are
// the process's, allocated at the first large copy and kept.
#include "reference/gpu/staged_copy.hpp"

#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "reference/gpu/hip_compat.hpp"
#include "reference/gpu/launch_check.hpp"

namespace mqa::gpu {
namespace {

constexpr std::size_t kPlainBelow = std::size_t{64} << 20;
constexpr std::size_t kChunk = std::size_t{16} << 20;
constexpr int kLanes = 4;

struct staging {
  std::mutex busy;
  void* buffers[kLanes][2] = {};

  // Every buffer or none: a refusal part way frees what was taken, so a later copy tries again.
  void allocate() {
    if (buffers[kLanes - 1][1] != nullptr) return;
    void* taken[kLanes][2] = {};
    try {
      for (auto& lane : taken)
        for (void*& b : lane) check(hipHostMalloc(&b, kChunk, hipHostMallocPortable), "pinned staging buffer");
    } catch (...) {
      for (auto& lane : taken)
        for (void* b : lane)
          if (b != nullptr) (void)hipHostFree(b);
      throw;
    }
    for (int l = 0; l < kLanes; ++l)
      for (int k = 0; k < 2; ++k) buffers[l][k] = taken[l][k];
  }
};

staging& pool() {
  static staging* s = new staging;  // never freed: pinned memory outlives the runtime's teardown
  return *s;
}

enum class direction { to_device, to_host };

// Lane `lane`'s chunks of the copy: lane, lane + kLanes, ...
void run_lane(direction d, int device, int lane, char* to, const char* from, std::size_t bytes, void* const* buffer,
              const char* what) {
  check(hipSetDevice(device), what);
  // The lane's stream and events, released however the lane ends; a lane that failed first waits
  // for its transfers still in flight, which would otherwise go on reading or filling pinned
  // buffers the next copy reuses.
  struct lane_handles {
    hipStream_t stream = nullptr;
    hipEvent_t done[2] = {nullptr, nullptr};
    ~lane_handles() {
      if (stream != nullptr) (void)hipStreamSynchronize(stream);
      for (hipEvent_t e : done)
        if (e != nullptr) (void)hipEventDestroy(e);
      if (stream != nullptr) (void)hipStreamDestroy(stream);
    }
  } handles;
  check(hipStreamCreate(&handles.stream), what);
  check(hipEventCreate(&handles.done[0]), what);
  check(hipEventCreate(&handles.done[1]), what);
  hipStream_t stream = handles.stream;
  hipEvent_t* done = handles.done;
  const std::size_t chunks = (bytes + kChunk - 1) / kChunk;
  auto span = [&](std::size_t c) {
    const std::size_t offset = c * kChunk;
    return std::pair{offset, bytes - offset < kChunk ? bytes - offset : kChunk};
  };
  if (d == direction::to_device) {
    int k = 0;
    for (std::size_t c = static_cast<std::size_t>(lane); c < chunks; c += kLanes, ++k) {
      const auto [offset, size] = span(c);
      if (k >= 2) check(hipEventSynchronize(done[k % 2]), what);  // the buffer's last transfer is over
      std::memcpy(buffer[k % 2], from + offset, size);
      check(hipMemcpyAsync(to + offset, buffer[k % 2], size, hipMemcpyHostToDevice, stream), what);
      check(hipEventRecord(done[k % 2], stream), what);
    }
  } else {
    auto issue = [&](std::size_t c, int k) {
      const auto [offset, size] = span(c);
      check(hipMemcpyAsync(buffer[k % 2], from + offset, size, hipMemcpyDeviceToHost, stream), what);
      check(hipEventRecord(done[k % 2], stream), what);
    };
    const auto first = static_cast<std::size_t>(lane);
    if (first < chunks) issue(first, 0);
    int k = 0;
    for (std::size_t c = first; c < chunks; c += kLanes, ++k) {
      if (c + kLanes < chunks) issue(c + kLanes, k + 1);  // its buffer was drained by the step before
      check(hipEventSynchronize(done[k % 2]), what);
      const auto [offset, size] = span(c);
      std::memcpy(to + offset, buffer[k % 2], size);
    }
  }
  check(hipStreamSynchronize(stream), what);
}

void staged(direction d, void* to, const void* from, std::size_t bytes, const char* what) {
  staging& s = pool();
  const std::lock_guard<std::mutex> lock(s.busy);
  s.allocate();
  int device = 0;
  check(hipGetDevice(&device), what);
  std::vector<std::exception_ptr> failures(kLanes);
  std::vector<std::thread> lanes;
  for (int lane = 0; lane < kLanes; ++lane)
    lanes.emplace_back([&, lane] {
      try {
        run_lane(d, device, lane, static_cast<char*>(to), static_cast<const char*>(from), bytes, s.buffers[lane], what);
      } catch (...) {
        failures[static_cast<std::size_t>(lane)] = std::current_exception();
      }
    });
  for (std::thread& t : lanes) t.join();
  for (const std::exception_ptr& f : failures)
    if (f) std::rethrow_exception(f);
}

}  // namespace

void copy_to_device_staged(void* to, const void* from, std::size_t bytes, const char* what) {
  if (bytes == 0) return;
  if (bytes < kPlainBelow) {
    check(hipMemcpy(to, from, bytes, hipMemcpyHostToDevice), what);
    return;
  }
  staged(direction::to_device, to, from, bytes, what);
}

void copy_to_host_staged(void* to, const void* from, std::size_t bytes, const char* what) {
  if (bytes == 0) return;
  if (bytes < kPlainBelow) {
    check(hipMemcpy(to, from, bytes, hipMemcpyDeviceToHost), what);
    return;
  }
  staged(direction::to_host, to, from, bytes, what);
}

}  // namespace mqa::gpu
