// A tensor from the caller, read where it lies: through the buffer protocol where the object has
// one (NumPy arrays, read-only ones and memory maps included, which DLPack cannot export), else
// through DLPack's `__dlpack__` (torch tensors and the rest). The judge reads the caller's memory,
// never a copy; what was borrowed is given back (the buffer released, DLPack's deleter called)
// when this object goes, also when the constructor refuses the tensor.
#pragma once

#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>

#include "api/output.hpp"

namespace mqa::python {

class borrowed_tensor {
 public:
  // A 2-D array of float32, or of bfloat16 (or uint16 bfloat16 bits), with adjacent columns and any
  // row stride, in host memory or a GPU's (array().device says which); anything else is an
  // input_error naming `shown` and what is accepted.
  borrowed_tensor(const pybind11::object& obj, std::string shown);

  const api::output_array& array() const { return array_; }

 private:
  void take_buffer(const pybind11::object& obj, const std::string& shown);
  void take_dlpack(const pybind11::object& obj, const std::string& shown);

  struct give_back {
    void operator()(DLManagedTensor* t) const {
      if (t->deleter != nullptr) t->deleter(t);
    }
  };
  std::optional<pybind11::buffer_info> buffer_;
  std::unique_ptr<DLManagedTensor, give_back> managed_;
  api::output_array array_;
};

}  // namespace mqa::python
