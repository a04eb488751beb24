// stratacl._torch: the process group class torch.distributed instantiates for backend
// "stratacl", and the heap allocator hooks. stratacl/torch.py registers the backend.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>
#include <torch/python.h>

#include "backend/heap_allocator.h"
#include "backend/process_group.h"

namespace py = pybind11;
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
}
