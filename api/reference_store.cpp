#include "reference_store.hpp"

#include <algorithm>

namespace mqa::api {

std::shared_ptr<const judge::references> reference_store::find(const void* owner) {
  const std::lock_guard<std::mutex> held(lock_);
  const auto it = std::find_if(entries_.begin(), entries_.end(), [&](const entry& e) { return e.owner == owner; });
  if (it == entries_.end()) return nullptr;
  entries_.splice(entries_.begin(), entries_, it);
  return it->references;
}

void reference_store::put(const void* owner, std::shared_ptr<const judge::references> references) {
  const std::size_t bytes = judge::bytes_of(*references);
  const std::lock_guard<std::mutex> held(lock_);
  const auto it = std::find_if(entries_.begin(), entries_.end(), [&](const entry& e) { return e.owner == owner; });
  if (it != entries_.end()) {
    held_ -= it->bytes;
    entries_.erase(it);
  }
  if (bytes > capacity_) return;
  evict_to(capacity_ - bytes);
  entries_.push_front({owner, std::move(references), bytes});
  held_ += bytes;
}

void reference_store::forget(const void* owner) {
  const std::lock_guard<std::mutex> held(lock_);
  const auto it = std::find_if(entries_.begin(), entries_.end(), [&](const entry& e) { return e.owner == owner; });
  if (it == entries_.end()) return;
  held_ -= it->bytes;
  entries_.erase(it);
}

std::shared_ptr<const void> reference_store::find_device(const void* owner) {
  const std::lock_guard<std::mutex> held(lock_);
  const auto it = std::find_if(entries_.begin(), entries_.end(), [&](const entry& e) { return e.owner == owner; });
  return it == entries_.end() ? nullptr : it->device;
}

void reference_store::put_device(const void* owner, std::shared_ptr<const void> references, std::size_t bytes) {
  const std::lock_guard<std::mutex> held(lock_);
  const auto it = std::find_if(entries_.begin(), entries_.end(), [&](const entry& e) { return e.owner == owner; });
  if (it == entries_.end()) return;
  it->device = std::move(references);
  it->device_bytes = bytes;
}

std::size_t reference_store::device_bytes() const {
  const std::lock_guard<std::mutex> held(lock_);
  std::size_t total = 0;
  for (const entry& e : entries_) total += e.device ? e.device_bytes : 0;
  return total;
}

void reference_store::set_capacity(std::size_t bytes) {
  const std::lock_guard<std::mutex> held(lock_);
  capacity_ = bytes;
  evict_to(bytes);
}

void reference_store::evict_to(std::size_t bytes) {
  while (held_ > bytes && !entries_.empty()) {
    held_ -= entries_.back().bytes;
    entries_.pop_back();
  }
}

std::size_t reference_store::capacity() const {
  const std::lock_guard<std::mutex> held(lock_);
  return capacity_;
}
std::size_t reference_store::held_bytes() const {
  const std::lock_guard<std::mutex> held(lock_);
  return held_;
}
std::size_t reference_store::entries() const {
  const std::lock_guard<std::mutex> held(lock_);
  return entries_.size();
}

}  // namespace mqa::api
