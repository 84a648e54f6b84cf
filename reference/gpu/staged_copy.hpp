// Copies of gigabytes between pageable host memory (a std::vector's) and the device. The runtime
// copies pageable memory through a small pinned buffer of its own, one host thread moving the bytes:
// about 5 GB/s on the H200's host, where the link itself takes about ten times that. These copies
// go through pinned buffers of their own instead, filled (or drained) by several host threads
// while the copy engines move the chunks before. Below 64 MiB they are the runtime's plain copy.
// Plain C++: callable from host code that never sees the GPU runtime's headers.
#pragma once

#include <cstddef>

namespace mqa::gpu {

// `bytes` from host memory at `from` to device memory at `to` on the calling thread's current
// device, finished when it returns. `what` names the copy in errors (std::runtime_error).
void copy_to_device_staged(void* to, const void* from, std::size_t bytes, const char* what);

// `bytes` from device memory at `from` (the current device) to host memory at `to`.
void copy_to_host_staged(void* to, const void* from, std::size_t bytes, const char* what);

}  // namespace mqa::gpu
