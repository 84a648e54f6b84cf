#include "suite_runner.hpp"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <fmt/core.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "api/suite_run.hpp"
#include "borrowed_tensor.hpp"
#include "contract_flags.hpp"
#include "kernels/external/protocol.hpp"
#include "kernels/external/text.hpp"
#include "reports/report.hpp"
#include "validator/input_error.hpp"
#include "validator/io/json_text.hpp"

namespace py = pybind11;

namespace mqa::python {
namespace {

// A copy of `values` as a NumPy array of `shape`: the kernel's own, whatever it does with it (the
// case's tensors go when the next case is generated).
template <class T>
py::array_t<T> array_of(const std::vector<T>& values, std::vector<py::ssize_t> shape) {
  py::array_t<T> a(shape);
  std::copy(values.begin(), values.end(), a.mutable_data());
  return a;
}

// The case's inputs as bundle.py names them (validator/bundle/files.hpp's arrays): what a kernel is
// given, never the reference.
py::dict inputs_of(const inputs::tensors& t) {
  py::dict a;
  a["q"] = array_of(t.q, {t.m, t.heads, t.head_dim});
  a["weights"] = array_of(t.weights, {t.m, t.heads});
  a["ks"] = array_of(t.ks, {t.m});
  a["ke"] = array_of(t.ke, {t.m});
  if (t.paged) {
    const inputs::paged_cache& p = *t.paged;
    a["kv_cache"] = array_of(p.kv_cache, {p.num_blocks, p.page_bytes});
    a["block_table"] = array_of(p.block_table, {p.batch, p.max_blocks});
    a["context_lens"] = p.context_lens_2d ? array_of(p.context_lens, {p.batch, p.next_n}) : array_of(p.context_lens, {p.batch});
  } else {
    a["k"] = array_of(t.k, {t.n, t.head_dim});
    a["k_scale"] = array_of(t.k_scale, {t.n});
  }
  return a;
}

using times = std::tuple<double, double, double>;  // kernel, turn, poison seconds

std::vector<api::launch_times> launch_times_of(const std::vector<times>& given) {
  std::vector<api::launch_times> out;
  for (const auto& [kernel, turn, poison] : given) out.push_back({kernel, turn, poison});
  return out;
}

class suite_runner {
 public:
  suite_runner(const std::string& cases, const std::vector<std::string>& case_names,
               const std::vector<std::string>& flags, const std::string& command,
               const std::vector<std::string>& must_produce, const std::string& operation, int timing_launches,
               const std::optional<std::string>& out, unsigned threads, bool diagnose) {
    api::suite_run_options o;
    o.cases_file = cases;
    o.case_names = case_names;
    // Text from Python enters here as the adapter's enters through the protocol (text.hpp): bytes
    // (the package hands its strings over encoded, surrogate escapes as the bytes they stand for)
    // made valid UTF-8, each bad byte shown as \xNN.
    o.kernel.command = external::valid_utf8(command);
    o.kernel.timeout_seconds = 0;  // in process: nothing to time out
    o.kernel.must_produce = must_produce;
    o.kernel.operation = operation;
    o.kernel.timing_launches = timing_launches;
    o.kernel.declared = contract_from_flags(flags);
    o.out = out;
    o.threads = threads;
    o.diagnose = diagnose;
    const py::gil_scoped_release unlocked;
    run_ = std::make_unique<api::suite_run>(o);
  }

  // None at the end of the suite; else the case: its name, case.toml's text, its inputs, and the
  // columns and row stride of the buffers to poison.
  py::object next() {
    const verdict::kernel_case* c = nullptr;
    {
      const py::gil_scoped_release unlocked;  // the inputs and the reference take seconds at production
      c = run_->next();
    }
    if (c == nullptr) return py::none();
    py::dict d;
    d["name"] = c->spec.name;
    d["toml"] = run_->case_toml();
    d["inputs"] = inputs_of(c->tensors);
    d["width"] = run_->output_width();
    d["stride"] = run_->output_stride();
    return d;
  }

  // As an adapter's `unsupported` answer is (protocol.cpp): one line, cut after
  // kMaxUnsupportedBytes.
  void unsupported(const std::string& why) {
    run_->unsupported(why.empty() ? std::string("(the kernel gave no reason)")
                                  : external::one_line(why, external::kMaxUnsupportedBytes));
  }

  std::string record(const py::object& first, const py::object& second, const std::vector<times>& launches,
                     const std::vector<times>& timing, const std::string& error) {
    std::optional<borrowed_tensor> a, b;
    std::string problem = external::valid_utf8(error);
    // An output the judge cannot read (a wrong dtype or layout) is the case's error, as an
    // adapter's file of the wrong shape is: the run goes on.
    auto borrow = [&](const py::object& obj, const char* shown, std::optional<borrowed_tensor>& into) {
      if (obj.is_none()) return;
      try {
        into.emplace(obj, shown);
      } catch (const input_error& e) {
        problem += std::string(problem.empty() ? "" : "; ") + e.what();
      }
    };
    borrow(first, "launch 1's output", a);
    if (a) borrow(second, "launch 2's output", b);
    const py::gil_scoped_release unlocked;
    return run_->record(a ? &a->array() : nullptr, b ? &b->array() : nullptr, launch_times_of(launches),
                        launch_times_of(timing), problem);
  }

  // "reports: ..." once finish() has put the reports in place, else "": an interrupt that came
  // while they were written is told whether they were.
  std::string written() const { return external::valid_utf8(run_->written()); }

  // (report.json's text, the exit status of `mqacheck run`, "reports: ..." or "", why the reports
  // could not be written or "").
  std::tuple<std::string, int, std::string, std::string> finish(const std::string& label) {
    const py::gil_scoped_release unlocked;
    const verdict::suite_report r = run_->finish(external::valid_utf8(label));
    return {io::json_text(reports::suite_json(r), 2), api::run_exit_status(r), written(),
            external::valid_utf8(run_->write_error())};
  }

 private:
  std::unique_ptr<api::suite_run> run_;
};

}  // namespace

void bind_suite_run(py::module_& m) {
  py::class_<suite_runner>(m, "SuiteRun")
      .def(py::init<const std::string&, const std::vector<std::string>&, const std::vector<std::string>&,
                    const std::string&, const std::vector<std::string>&, const std::string&, int,
                    const std::optional<std::string>&, unsigned, bool>(),
           py::arg("cases"), py::arg("case_names"), py::arg("contract_flags"), py::arg("command"),
           py::arg("must_produce"), py::arg("operation"), py::arg("timing_launches"), py::arg("out"),
           py::arg("threads") = 0u, py::arg("diagnose") = true)
      .def("next", &suite_runner::next)
      .def("unsupported", &suite_runner::unsupported, py::arg("why"))
      .def("record", &suite_runner::record, py::arg("first"), py::arg("second"), py::arg("launches"),
           py::arg("timing"), py::arg("error"))
      .def("finish", &suite_runner::finish, py::arg("label"))
      .def_property_readonly("written", &suite_runner::written);
}

}  // namespace mqa::python
