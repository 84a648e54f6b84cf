// The references of opened bundles kept between judgements in one process (the Python extension):
// a bundle judged again against the same contract is judged by the comparator alone, without
// reading reference.npy or computing magnitudes and centres again.
//
// Bounded by bytes (capacity()): the least recently used bundle's references leave first, and
// references larger than the whole capacity are not kept (such a bundle is judged block by block
// every time, holding one block at a time). Held per element judged: its logit (4 bytes), its
// magnitude (8) and under a bf16 contract its bfloat16 rounding (4); a modelled contract's centre
// as much again for the rows it samples. Thread-safe.
//
// Beside a kept bundle's host references, their copy on a GPU (the device comparator's,
// validator/compare/device) may be kept: it leaves with them, and its bytes (device memory, as
// many per element as on the host, and the comparator's working memory) are counted apart
// (device_bytes()), not against the capacity.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>

#include "validator/judge/bundle.hpp"

namespace mqa::api {

class reference_store {
 public:
  explicit reference_store(std::size_t capacity_bytes) : capacity_(capacity_bytes) {}

  // Null when `owner`'s references are not held; else they become the most recently used.
  std::shared_ptr<const judge::references> find(const void* owner);
  // Kept when they fit in the capacity, evicting the least recently used; a second put for the
  // same owner replaces the first.
  void put(const void* owner, std::shared_ptr<const judge::references> references);
  void forget(const void* owner);
  // The device copy of `owner`'s kept references (type-erased: this header builds without a GPU):
  // null where none is kept; put_device keeps one only beside kept host references.
  std::shared_ptr<const void> find_device(const void* owner);
  void put_device(const void* owner, std::shared_ptr<const void> references, std::size_t bytes);
  std::size_t device_bytes() const;
  // A smaller capacity evicts at once; 0 keeps nothing.
  void set_capacity(std::size_t bytes);

  std::size_t capacity() const;
  std::size_t held_bytes() const;
  std::size_t entries() const;

 private:
  struct entry {
    const void* owner;
    std::shared_ptr<const judge::references> references;
    std::size_t bytes;
    std::shared_ptr<const void> device = nullptr;
    std::size_t device_bytes = 0;
  };
  void evict_to(std::size_t bytes);  // with lock_ held

  mutable std::mutex lock_;
  std::list<entry> entries_;  // most recently used first
  std::size_t capacity_ = 0, held_ = 0;
};

}  // namespace mqa::api
