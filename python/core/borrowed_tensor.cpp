#include "borrowed_tensor.hpp"

#include <fmt/core.h>

#include "validator/input_error.hpp"

namespace mqa::python {
namespace {

std::string dtype_name(const DLDataType& t) {
  static constexpr const char* kCodes[] = {"int", "uint", "float", "opaque", "bfloat", "complex"};
  const char* code = t.code < std::size(kCodes) ? kCodes[t.code] : "code";
  return t.lanes == 1 ? fmt::format("{}{}", code, t.bits) : fmt::format("{}{}x{}", code, t.bits, t.lanes);
}

bool host_memory(DLDeviceType d) { return d == kDLCPU || d == kDLCUDAHost || d == kDLROCMHost; }

using element = api::output_array::element;

// What the array's elements are, or nullopt for anything the judge does not take.
std::optional<element> element_of(bool is_float, bool is_bfloat_or_bits, int bits) {
  if (is_float && bits == 32) return element::float32;
  if (is_bfloat_or_bits && bits == 16) return element::bfloat16;
  return std::nullopt;
}

// Shape and strides (in elements) checked the same way whichever protocol gave them.
api::output_array checked(void* data, std::optional<element> type, const std::string& type_name, std::int64_t ndim,
                          const std::int64_t* shape, std::int64_t row_stride, std::int64_t col_stride,
                          const std::string& shown) {
  if (ndim != 2 || !type)
    throw input_error(fmt::format("{}: a {}-D {} tensor (accepted: 2-D float32, or bfloat16 under logits_dtype=\"bf16\")",
                                  shown, ndim, type_name));
  const std::int64_t rows = shape[0], cols = shape[1];
  if (cols > 1 && rows > 0 && col_stride != 1)
    throw input_error(fmt::format("{}: columns {} elements apart (accepted: adjacent columns, any row stride: "
                                  "np.ascontiguousarray or .contiguous())",
                                  shown, col_stride));
  return {.data = data, .type = *type, .rows = rows, .cols = cols, .row_stride = rows > 1 ? row_stride : cols};
}

}  // namespace

borrowed_tensor::borrowed_tensor(const pybind11::object& obj, std::string shown) {
  if (PyObject_CheckBuffer(obj.ptr()))
    take_buffer(obj, shown);
  else if (pybind11::hasattr(obj, "__dlpack__"))
    take_dlpack(obj, shown);
  else
    throw input_error(fmt::format("{}: a {} is neither a buffer nor a DLPack tensor (accepted: a NumPy array or a "
                                  "torch tensor)",
                                  shown, Py_TYPE(obj.ptr())->tp_name));
}

void borrowed_tensor::take_buffer(const pybind11::object& obj, const std::string& shown) {
  buffer_ = pybind11::reinterpret_borrow<pybind11::buffer>(obj).request();
  const pybind11::buffer_info& b = *buffer_;
  // The struct module's codes, after any byte-order mark: "f" float32, "H" uint16 (bfloat16 bits).
  // A mark of the other byte order ('>' or '!' here on little-endian hosts) is refused: its bytes
  // would be read swapped.
  const std::string f = b.format;
  const char code = f.empty() ? '?' : f.back();
  if (f.size() > 1 && (f.front() == '>' || f.front() == '!'))
    throw input_error(fmt::format("{}: format '{}' is big-endian (accepted: the machine's byte order)", shown, f));
  const bool is_float = b.itemsize == 4 && code == 'f';
  const bool is_bits = b.itemsize == 2 && code == 'H';
  const std::string name = fmt::format("'{}' ({}-byte)", f, b.itemsize);
  std::int64_t row_stride = 0, col_stride = 1;
  if (b.ndim == 2 && b.itemsize > 0) {
    if (b.strides[0] % b.itemsize != 0 || b.strides[1] % b.itemsize != 0)
      throw input_error(fmt::format("{}: strides of {} and {} bytes, not whole elements", shown, b.strides[0], b.strides[1]));
    row_stride = b.strides[0] / b.itemsize, col_stride = b.strides[1] / b.itemsize;
  }
  const std::vector<std::int64_t> shape(b.shape.begin(), b.shape.end());
  array_ = checked(b.ptr, element_of(is_float, is_bits, static_cast<int>(b.itemsize * 8)),
                   is_float ? "float32" : name, b.ndim, shape.data(), row_stride, col_stride, shown);
}

void borrowed_tensor::take_dlpack(const pybind11::object& obj, const std::string& shown) {
  // A tensor on a GPU is read on the runtime's legacy default stream (CUDA's 1, ROCm's 0 in
  // DLPack's convention): the producer orders its pending work before that stream's.
  int device_type = kDLCPU;
  if (pybind11::hasattr(obj, "__dlpack_device__"))
    device_type = obj.attr("__dlpack_device__")().cast<pybind11::tuple>()[0].cast<int>();
  pybind11::object capsule = device_type == kDLCUDA   ? obj.attr("__dlpack__")(pybind11::arg("stream") = 1)
                             : device_type == kDLROCM ? obj.attr("__dlpack__")(pybind11::arg("stream") = 0)
                                                      : obj.attr("__dlpack__")();
  auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  if (managed == nullptr) {
    PyErr_Clear();
    throw input_error(fmt::format("{}: __dlpack__ gave no DLPack tensor capsule", shown));
  }
  // The capsule is consumed: its deleter is ours to call (the DLPack protocol's rename).
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  managed_.reset(managed);
  const DLTensor& t = managed->dl_tensor;
  const bool on_gpu = t.device.device_type == kDLCUDA || t.device.device_type == kDLROCM;
  if (!host_memory(t.device.device_type) && !on_gpu)
    throw input_error(fmt::format("{}: a tensor on device type {} (accepted: host memory, or a CUDA or ROCm GPU's; "
                                  "move it with .cpu())",
                                  shown, static_cast<int>(t.device.device_type)));
  const auto type = element_of(t.dtype.code == kDLFloat && t.dtype.lanes == 1,
                               (t.dtype.code == kDLBfloat || t.dtype.code == kDLUInt) && t.dtype.lanes == 1,
                               t.dtype.bits);
  // DLPack strides count elements; none means compact row-major.
  const std::int64_t cols = t.ndim == 2 ? t.shape[1] : 0;
  array_ = checked(static_cast<char*>(t.data) + t.byte_offset, type, dtype_name(t.dtype), t.ndim, t.shape,
                   t.strides ? t.strides[0] : cols, t.strides ? t.strides[1] : 1, shown);
  array_.device = on_gpu ? t.device.device_id : -1;
}

}  // namespace mqa::python
