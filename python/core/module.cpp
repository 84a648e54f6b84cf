// mqacheck._core: the judge in the caller's own Python process. `check` of the command line without
// its files or its second process: the output is read where it lies (the buffer protocol or DLPack,
// any row stride: borrowed_tensor.hpp), the bundle is read and proven once per Bundle, and the
// judgement is the document `mqacheck check --json` writes, from the same code (api/check.hpp).
// A bundle's references (reference.npy's rows, magnitudes, a modelled contract's centre) are kept
// for its next judgement (api/reference_store.hpp): a bundle judged again costs the comparator only.
// python/mqacheck/check.py is its one caller.
//
// A kernel that runs in this process can read everything the judge holds: in-process judging is
// for a kernel engineer's own tests, and `mqacheck run --kernel` (its own process, inputs only) is
// the way to judge a kernel that must not see the answer.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/check.hpp"
#include "api/contract_options.hpp"
#include "api/output.hpp"
#include "borrowed_tensor.hpp"
#include "contract_flags.hpp"
#include "kernels/external/text.hpp"
#include "suite_runner.hpp"
#include "reports/build_info.hpp"
#include "validator/input_error.hpp"
#include "validator/io/json_text.hpp"

namespace py = pybind11;

namespace mqa::python {
namespace {

bundle::digest_use digest_use_named(const std::string& name) {
  if (name == "verify") return bundle::digest_use::verify;
  if (name == "trust") return bundle::digest_use::trust;
  if (name == "ignore") return bundle::digest_use::ignore;
  throw input_error(fmt::format("digest '{}' is not known (accepted: verify, trust, ignore)", name));
}

// The references of every opened bundle, kept between its judgements (api/reference_store.hpp):
// at most a quarter of the machine's memory unless set_reference_cache_bytes says otherwise.
api::reference_store& references() {
  static api::reference_store store([] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? static_cast<std::size_t>(pages) * static_cast<std::size_t>(page) / 4 : std::size_t{0};
  }());
  return store;
}

// "GPU 0", or "the host", for a message.
std::string where(const api::output_array& a) { return a.device >= 0 ? fmt::format("GPU {}", a.device) : "the host"; }

// A bundle opened once and judged against as often as asked.
class opened_bundle {
 public:
  opened_bundle(const std::string& dir, const std::vector<std::string>& flags, const std::string& digest) {
    const api::contract_options declared = contract_from_flags(flags);
    const py::gil_scoped_release unlocked;
    bundle_ = api::open_bundle(dir, declared, digest_use_named(digest));
  }
  ~opened_bundle() { references().forget(bundle_.get()); }
  opened_bundle(const opened_bundle&) = delete;
  opened_bundle& operator=(const opened_bundle&) = delete;

  // The judgement document as JSON text.
  // The first judgement of a bundle opened under digest "verify" compares every row of its
  // reference.npy with the reference computed from its inputs; from then on the file is proven and
  // its values are taken as they are (the caller opens the bundle again when its files change).
  // Judgements of one Bundle take turns: the first one's proof of reference.npy is shared state.
  std::string judge(const py::object& logits, const py::object& repeat, bool diagnose, unsigned threads) {
    const auto entered = std::chrono::steady_clock::now();
    {
      const py::gil_scoped_release unlocked;
      const std::lock_guard<std::mutex> one_at_a_time(judging_);
      last_ = {};  // a judgement that fails reports no steps
      document_seconds_ = call_seconds_ = 0;
    }
    const borrowed_tensor first(logits, "logits");
    std::optional<borrowed_tensor> second;
    if (!repeat.is_none()) second.emplace(repeat, "repeat");
    if (second) {
      const api::output_array &a = first.array(), &b = second->array();
      if (a.type != b.type || a.rows != b.rows || a.cols != b.cols)
        throw input_error(fmt::format("repeat: expected the shape and dtype of logits, [{}, {}], found [{}, {}]{}",
                                      a.rows, a.cols, b.rows, b.cols, a.type != b.type ? " of another dtype" : ""));
      if (a.device != b.device)
        throw input_error(fmt::format("repeat: on {} and logits on {} (accepted: both on one GPU, or both on the host)",
                                      where(b), where(a)));
    }
    if (first.array().device >= 0) {
      const py::gil_scoped_release unlocked;
      const std::lock_guard<std::mutex> one_at_a_time(judging_);
      const compare::judgement j = api::judge_device_output(
          *bundle_, first.array(), second ? &second->array() : nullptr,
          {.diagnose = diagnose, .threads = threads, .references = &references()}, &last_);
      const auto start = std::chrono::steady_clock::now();
      const std::string text = io::json_text(api::judgement_document(*bundle_, j, "in memory"), -1);
      document_seconds_ = judge::seconds_since(start);
      if (!bundle_->paged) bundle_->inputs.trusted = true;
      call_seconds_ = judge::seconds_since(entered);
      return text;
    }
    api::judged_output out = api::judged_from_memory(first.array(), "logits", bundle_->problem, bundle_->contract);
    std::optional<api::judged_output> again;
    std::optional<kernels::output_view> repeat_view;
    if (second) {
      again.emplace(api::judged_from_memory(second->array(), "repeat", bundle_->problem, bundle_->contract));
      repeat_view = again->view();
    }
    const py::gil_scoped_release unlocked;
    const std::lock_guard<std::mutex> one_at_a_time(judging_);
    auto start = std::chrono::steady_clock::now();
    const compare::judgement j = api::judge_output(*bundle_, out.view(), repeat_view,
                                                   {.diagnose = diagnose, .threads = threads, .references = &references()});
    last_.judged_on = "host";  // only once judged: a judgement that fails reports no steps
    last_.host = judge::seconds_since(start);
    start = std::chrono::steady_clock::now();
    const std::string text = io::json_text(api::judgement_document(*bundle_, j, "in memory"), -1);
    document_seconds_ = judge::seconds_since(start);
    if (!bundle_->paged) bundle_->inputs.trusted = true;
    call_seconds_ = judge::seconds_since(entered);
    return text;
  }

  // Where the last judgement was made: "host", "device", or "host: " and why a GPU's output was
  // judged on the host (api::judge_device_output).
  std::string judged_on() {
    const py::gil_scoped_release unlocked;  // a judgement in another thread holds the lock without the GIL
    const std::lock_guard<std::mutex> one_at_a_time(judging_);
    return last_.judged_on;
  }
  // The last judgement's steps in wall seconds (api::device_judging): for a GPU's output,
  // "references" (found, or computed: then also "reference.npy read", "proof", "exact reference"
  // "centre" and "gather", judge::reference_seconds), "device copy", "comparator" (and of it "comparator
  // kernel", the device comparator's kernel from launch to end, "comparator download", its figures
  // copied to the host, and "comparator summary", the judgement made of them), "launches" and "witness"
  // (those taken before a fallback to the host); where the host judged, "host"; "document", the
  // judgement written as JSON text; and "call", the whole call from its entry to its return.
  std::map<std::string, double> seconds() {
    const py::gil_scoped_release unlocked;
    const std::lock_guard<std::mutex> one_at_a_time(judging_);
    if (last_.judged_on.empty()) return {};
    std::map<std::string, double> out{{"document", document_seconds_}, {"call", call_seconds_}};
    if (last_.judged_on != "host")  // a GPU's output: the device's steps, taken before any fallback
      out.insert({{"references", last_.references},
                  {"reference.npy read", last_.computed.read},
                  {"proof", last_.computed.proof},
                  {"exact reference", last_.computed.reference},
                  {"centre", last_.computed.centre},
                  {"gather", last_.computed.gather},
                  {"device copy", last_.device_copy},
                  {"comparator", last_.device.compare},
                  {"comparator kernel", last_.device.compare_kernel},
                  {"comparator download", last_.device.compare_download},
                  {"comparator summary", last_.device.compare_summary},
                  {"launches", last_.device.determinism},
                  {"witness", last_.device.suspicion}});
    if (last_.judged_on != "device") out.insert({{"host", last_.host}});
    return out;
  }
  std::string case_name() const { return bundle_->inputs.spec.name; }
  std::string contract() const { return kernels::describe(bundle_->contract); }
  std::pair<std::int64_t, std::int64_t> shape() const { return {bundle_->problem.m, bundle_->problem.n}; }

 private:
  std::unique_ptr<api::bundle_under_check> bundle_;
  std::mutex judging_;
  api::device_judging last_;
  double document_seconds_ = 0, call_seconds_ = 0;
};

}  // namespace
}  // namespace mqa::python

PYBIND11_MODULE(_core, m) {
  using mqa::python::opened_bundle;
  m.doc() = "mqacheck's judge in process (python/core/module.cpp); mqacheck.check is its interface";
  // Bad input (a modified bundle, logits of the wrong shape, an unknown contract word): mqacheck's
  // own message, as `check`'s exit status 2 carries it.
  // Its text made valid UTF-8 first (a path that is not names itself \xNN): Python takes no other.
  static py::exception<mqa::input_error> input_error_type(m, "InputError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const mqa::input_error& e) {
      input_error_type(mqa::external::valid_utf8(e.what()).c_str());
    }
  });
  m.attr("version") = std::string(mqa::reports::this_build().version);
  m.attr("commit") = std::string(mqa::reports::this_build().commit);
  m.def("reference_cache_bytes", [] { return mqa::python::references().capacity(); },
        "the bytes of references kept between judgements, over every opened bundle");
  m.def("set_reference_cache_bytes", [](std::size_t bytes) { mqa::python::references().set_capacity(bytes); },
        py::arg("bytes"), "0 keeps none: every judgement reads and computes its references again");
#ifdef MQA_HAVE_GPU
  m.attr("gpu") = true;  // a GPU's tensors are judged there (api::judge_device_output)
#else
  m.attr("gpu") = false;
#endif
  m.def("reference_device_bytes", [] { return mqa::python::references().device_bytes(); },
        "the bytes of GPU memory the kept references' device copies hold");
  m.def("reference_cache_held", [] {
    return std::pair{mqa::python::references().held_bytes(), mqa::python::references().entries()};
  }, "(bytes, bundles) kept now");
  py::class_<opened_bundle>(m, "Bundle")
      .def(py::init<const std::string&, const std::vector<std::string>&, const std::string&>(), py::arg("dir"),
           py::arg("contract_flags"), py::arg("digest") = "verify")
      .def("judge", &opened_bundle::judge, py::arg("logits"), py::arg("repeat") = py::none(),
           py::arg("diagnose") = true, py::arg("threads") = 0u)
      .def_property_readonly("judged_on", &opened_bundle::judged_on)
      .def_property_readonly("seconds", &opened_bundle::seconds)
      .def_property_readonly("case", &opened_bundle::case_name)
      .def_property_readonly("contract", &opened_bundle::contract)
      .def_property_readonly("shape", &opened_bundle::shape);
  mqa::python::bind_suite_run(m);
}
