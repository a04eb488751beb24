// stratacl._torch: the process group class torch.distributed instantiates for backend
// "stratacl", and the heap allocator hooks. stratacl/torch.py registers the backend.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/python.h>

#include "backend/exit_drain.h"
#include "backend/heap_allocator.h"
#include "backend/moe_buffer.h"
#include "backend/p2p_coalescer.h"
#include "backend/process_group.h"

namespace py = pybind11;
using stratacl_torch::MoeBuffer;
using stratacl_torch::MoeRouting;
using stratacl_torch::ProcessGroupStrataCL;

PYBIND11_MODULE(_torch, m) {
  m.doc() = "StrataCL's torch.distributed backend and heap tensor allocator";
  // The base class must be registered (by torch) before a subclass can name it.
  py::module_::import("torch.distributed");

  py::class_<ProcessGroupStrataCL, c10d::ProcessGroup, c10::intrusive_ptr<ProcessGroupStrataCL>>(
      m, "ProcessGroupStrataCL")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout) {
             return c10::make_intrusive<ProcessGroupStrataCL>(store, rank, size, timeout);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           // The rendezvous blocks on peers: other Python threads go on meanwhile.
           py::call_guard<py::gil_scoped_release>());

  m.def(
      "drain_at_exit",
      [](bool failed) {
        if (failed) stratacl_torch::exit_drain::revoke_all();
        // Sends and receives still held back are issued (or, revoked, fail at once), as a wait()
        // would issue them: their Works then complete here too, not during finalization.
        try {
          stratacl_torch::P2PCoalescer::flush_all();
        } catch (const std::exception&) {  // what failed to queue was completed with its error
        }
        stratacl_torch::exit_drain::drain();
      },
      py::arg("failed"),
      "Waits until every group's stream has run what was queued on it; with failed=True, "
      "revokes every group's communicator first (stratacl.torch registers it with atexit).",
      py::call_guard<py::gil_scoped_release>());
  m.def("use_heap_allocator", &stratacl_torch::use_heap_allocator,
        "Every CPU tensor created from now on takes its memory from the StrataCL heap.");
  m.def(
      "heap_bytes",
      [](int64_t bytes) {
        TORCH_CHECK(bytes >= 0, "stratacl: negative size");
        c10::Allocator* heap = stratacl_torch::heap_allocator();
        c10::Storage storage(c10::Storage::use_byte_size_t(), size_t(bytes),
                             heap->allocate(size_t(bytes)), heap, /*resizable=*/false);
        return at::empty({0}, at::kByte).set_(storage, 0, {bytes}, {1});
      },
      "An uninitialised uint8 tensor of `bytes` bytes in the StrataCL heap.");

  py::class_<MoeRouting, std::shared_ptr<MoeRouting>>(
      m, "MoeRouting", "The routing of one dispatch: drives its combines and reused dispatches.")
      .def_property_readonly("num_tokens", &MoeRouting::tokens)
      .def_property_readonly("num_recv_rows", &MoeRouting::rows);
  py::class_<MoeBuffer>(m, "MoeBuffer")
      .def(py::init([](const c10::intrusive_ptr<c10d::ProcessGroup>& group, int hidden, int topk,
                       int experts, int max_tokens, py::object x_dtype, bool fp8_in_flight,
                       py::object out_dtype, bool expert_major) {
             stratacl_torch::MoeOptions o{hidden,
                                          topk,
                                          experts,
                                          max_tokens,
                                          torch::python::detail::py_object_to_dtype(x_dtype),
                                          fp8_in_flight,
                                          torch::python::detail::py_object_to_dtype(out_dtype),
                                          expert_major};
             return std::make_unique<MoeBuffer>(group, o);
           }),
           py::arg("group"), py::arg("hidden"), py::arg("topk"), py::arg("num_experts"),
           py::arg("max_tokens_per_rank"), py::arg("x_dtype"), py::arg("fp8_in_flight"),
           py::arg("out_dtype"), py::arg("expert_major"))
      .def_property_readonly("num_local_experts", &MoeBuffer::local_experts)
      .def("layout", &MoeBuffer::layout, py::arg("topk_idx"))
      .def(
          "dispatch",
          [](MoeBuffer& b, const at::Tensor& x, std::optional<at::Tensor> scales,
             std::optional<at::Tensor> topk_idx, std::optional<at::Tensor> topk_weights,
             std::shared_ptr<MoeRouting> reuse, bool async_op) {
            MoeBuffer::Received r = b.dispatch(x, scales, topk_idx, topk_weights, reuse, async_op);
            return py::make_tuple(r.x, r.scales.defined() ? py::cast(r.scales) : py::none(),
                                  r.topk_idx.defined() ? py::cast(r.topk_idx) : py::none(),
                                  r.topk_weights.defined() ? py::cast(r.topk_weights) : py::none(),
                                  r.tokens_per_expert, r.rows, r.routing);
          },
          py::arg("x"), py::arg("x_scales") = py::none(), py::arg("topk_idx") = py::none(),
          py::arg("topk_weights") = py::none(), py::arg("handle") = py::none(),
          py::arg("async_op") = false)
      .def("combine", &MoeBuffer::combine, py::arg("handle"), py::arg("x"),
           py::arg("topk_weights") = py::none(), py::arg("async_op") = false)
      .def("wait", &MoeBuffer::wait);
}
