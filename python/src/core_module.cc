// stratacl._core: the C API on numpy arrays. A Comm wraps an sclComm_t; `empty` makes arrays whose
// memory is in the registration-on-allocation heap, so collectives on them copy nothing. Arrays
// from anywhere else work too (staged). Errors raise stratacl.Error with sclGetLastError's text.
// Every call releases the GIL while it runs, so other Python threads go on.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "stratacl/stratacl.h"

namespace py = pybind11;

namespace {

PyObject* g_error = nullptr;  // stratacl.Error

// Raises stratacl.Error (a RuntimeError) carrying the code's name and the last error's text.
void check(sclResult_t r, sclComm_t comm = nullptr) {
  if (r == sclSuccess) return;
  const std::string text = std::string(sclGetErrorString(r)) + ": " + sclGetLastError(comm);
  py::object error = py::reinterpret_borrow<py::object>(g_error)(text, int(r));
  PyErr_SetObject(g_error, error.ptr());
  throw py::error_already_set();
}

sclDataType_t dtype_of(const py::dtype& dt) {
  switch (dt.kind()) {
    case 'i':
      if (dt.itemsize() == 1) return sclInt8;
      if (dt.itemsize() == 4) return sclInt32;
      if (dt.itemsize() == 8) return sclInt64;
      break;
    case 'u':
      if (dt.itemsize() == 1) return sclUint8;
      if (dt.itemsize() == 4) return sclUint32;
      if (dt.itemsize() == 8) return sclUint64;
      break;
    case 'b':
      return sclUint8;
    case 'f':
      if (dt.itemsize() == 2) return sclFloat16;
      if (dt.itemsize() == 4) return sclFloat32;
      if (dt.itemsize() == 8) return sclFloat64;
      break;
  }
  throw py::type_error("stratacl: no StrataCL type for numpy dtype " + std::string(py::repr(dt)));
}

sclRedOp_t op_of(const std::string& op) {
  if (op == "sum") return sclSum;
  if (op == "prod") return sclProd;
  if (op == "max") return sclMax;
  if (op == "min") return sclMin;
  if (op == "avg") return sclAvg;
  throw py::value_error("stratacl: op must be sum, prod, max, min or avg, not '" + op + "'");
}

// A C-contiguous array the call may write: its pointer, element count and type.
struct View {
  void* ptr;
  size_t count;
  sclDataType_t dtype;
};
View view(const py::array& a, const char* name, bool writable) {
  if (!(a.flags() & py::array::c_style))
    throw py::value_error(std::string("stratacl: ") + name + " must be C-contiguous");
  if (writable && !a.writeable())
    throw py::value_error(std::string("stratacl: ") + name + " is read-only");
  return {const_cast<void*>(a.data()), size_t(a.size()), dtype_of(a.dtype())};
}
void same_type(const View& a, const View& b) {
  if (a.dtype != b.dtype)
    throw py::type_error("stratacl: send and recv arrays must have the same dtype");
}
void need_count(const View& v, size_t want, const char* name) {
  if (v.count != want)
    throw py::value_error("stratacl: " + std::string(name) + " has " + std::to_string(v.count) +
                          " elements, the call needs " + std::to_string(want));
}

class Comm {
 public:
  explicit Comm(sclComm_t c) : comm_(c) {}
  ~Comm() {
    if (comm_) sclCommDestroy(comm_);
  }
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  static std::unique_ptr<Comm> from_env() {
    sclComm_t c = nullptr;
    sclResult_t r;
    {
      py::gil_scoped_release nogil;
      r = sclCommInitFromEnv(&c);
    }
    check(r);
    return std::make_unique<Comm>(c);
  }
  static std::unique_ptr<Comm> init_rank(int nranks, py::bytes id, int rank, int timeout_ms) {
    const std::string raw = id;
    if (raw.size() != SCL_UNIQUE_ID_BYTES)
      throw py::value_error("stratacl: unique id must be " + std::to_string(SCL_UNIQUE_ID_BYTES) +
                            " bytes");
    sclUniqueId uid;
    std::copy(raw.begin(), raw.end(), uid.internal);
    sclConfig_t config = SCL_CONFIG_INITIALIZER;
    if (timeout_ms > 0) config.timeoutMs = timeout_ms;
    sclComm_t c = nullptr;
    sclResult_t r;
    {
      py::gil_scoped_release nogil;
      r = sclCommInitRankConfig(&c, nranks, uid, rank, &config);
    }
    check(r);
    return std::make_unique<Comm>(c);
  }

  int rank() const {
    int r = -1;
    check(sclCommUserRank(live(), &r), comm_);
    return r;
  }
  int size() const {
    int n = 0;
    check(sclCommCount(live(), &n), comm_);
    return n;
  }
  std::unique_ptr<Comm> split(int color, int key) {
    sclComm_t out = nullptr;
    run([&] { return sclCommSplit(live(), color, key, &out, nullptr); });
    if (!out) return nullptr;
    return std::make_unique<Comm>(out);
  }
  void destroy() {
    sclComm_t c = live();
    comm_ = nullptr;
    sclResult_t r;
    {
      py::gil_scoped_release nogil;
      r = sclCommDestroy(c);
    }
    check(r);
  }
  void abort() {
    sclComm_t c = live();
    comm_ = nullptr;
    check(sclCommAbort(c));
  }
  void revoke() { check(sclCommRevoke(live(), SCL_REVOKE_DEFAULT), comm_); }
  std::unique_ptr<Comm> shrink(std::vector<int> exclude, bool abort) {
    sclComm_t out = nullptr;
    run([&] {
      return sclCommShrink(live(), exclude.data(), int(exclude.size()), &out, nullptr,
                           abort ? SCL_SHRINK_ABORT : SCL_SHRINK_DEFAULT);
    });
    return std::make_unique<Comm>(out);
  }

  void allreduce(const py::array& send, py::array& recv, const std::string& op) {
    const View s = view(send, "send", false), r = view(recv, "recv", true);
    same_type(s, r);
    need_count(r, s.count, "recv");
    const sclRedOp_t o = op_of(op);
    run([&] { return sclAllReduce(s.ptr, r.ptr, s.count, s.dtype, o, live(), nullptr); });
  }
  void reduce(const py::array& send, py::array& recv, const std::string& op, int root) {
    const View s = view(send, "send", false), r = view(recv, "recv", true);
    same_type(s, r);
    need_count(r, s.count, "recv");
    const sclRedOp_t o = op_of(op);
    run([&] { return sclReduce(s.ptr, r.ptr, s.count, s.dtype, o, root, live(), nullptr); });
  }
  void broadcast(py::array& buf, int root) {
    const View b = view(buf, "buf", true);
    run([&] { return sclBroadcast(b.ptr, b.ptr, b.count, b.dtype, root, live(), nullptr); });
  }
  void allgather(const py::array& send, py::array& recv) {
    const View s = view(send, "send", false), r = view(recv, "recv", true);
    same_type(s, r);
    need_count(r, s.count * size_t(size()), "recv");
    run([&] { return sclAllGather(s.ptr, r.ptr, s.count, s.dtype, live(), nullptr); });
  }
  void reduce_scatter(const py::array& send, py::array& recv, const std::string& op) {
    const View s = view(send, "send", false), r = view(recv, "recv", true);
    same_type(s, r);
    need_count(s, r.count * size_t(size()), "send");
    const sclRedOp_t o = op_of(op);
    run([&] { return sclReduceScatter(s.ptr, r.ptr, r.count, s.dtype, o, live(), nullptr); });
  }
  void alltoall(const py::array& send, py::array& recv) {
    const View s = view(send, "send", false), r = view(recv, "recv", true);
    same_type(s, r);
    need_count(r, s.count, "recv");
    const size_t n = size_t(size());
    if (s.count % n)
      throw py::value_error("stratacl: alltoall needs a multiple of " + std::to_string(n) +
                            " elements");
    run([&] { return sclAlltoAll(s.ptr, r.ptr, s.count / n, s.dtype, live(), nullptr); });
  }
  void send(const py::array& buf, int peer) {
    const View b = view(buf, "buf", false);
    run([&] { return sclSend(b.ptr, b.count, b.dtype, peer, live(), nullptr); });
  }
  void recv(py::array& buf, int peer) {
    const View b = view(buf, "buf", true);
    run([&] { return sclRecv(b.ptr, b.count, b.dtype, peer, live(), nullptr); });
  }
  void barrier() {
    run([&] { return sclBarrier(live(), nullptr); });
  }

 private:
  sclComm_t live() const {
    if (!comm_) throw py::value_error("stratacl: the communicator was destroyed");
    return comm_;
  }
  // Runs a blocking call without the GIL; raises on failure.
  template <typename F>
  void run(F&& call) {
    sclComm_t c = live();
    sclResult_t r;
    {
      py::gil_scoped_release nogil;
      r = call();
    }
    check(r, c);
  }

  sclComm_t comm_;
};

// A numpy array in the heap: its base is a capsule that gives the memory back.
py::array heap_empty(const std::vector<py::ssize_t>& shape, const py::dtype& dt) {
  dtype_of(dt);  // a type collectives can take
  size_t bytes = size_t(dt.itemsize());
  for (py::ssize_t d : shape) {
    if (d < 0) throw py::value_error("stratacl: negative dimension");
    bytes *= size_t(d);
  }
  void* p = nullptr;
  check(sclMemAlloc(&p, bytes ? bytes : 1));
  py::capsule owner(p, [](void* q) { sclMemFree(q); });
  return py::array(dt, shape, p, owner);
}

py::bytes unique_id() {
  sclUniqueId id;
  check(sclGetUniqueId(&id));
  return py::bytes(id.internal, SCL_UNIQUE_ID_BYTES);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "StrataCL on numpy arrays (the C API, one call per method)";
  py::object error = py::module_::import("builtins").attr("RuntimeError");
  g_error = PyErr_NewExceptionWithDoc(
      "stratacl.Error", "A StrataCL call failed: args are (message, sclResult_t code).",
      error.ptr(), nullptr);
  m.attr("Error") = py::handle(g_error);

  m.def("version", [] {
    int v = 0;
    check(sclGetVersion(&v));
    return v;
  });
  m.def("unique_id", &unique_id, "A fresh rendezvous token (rank 0 makes it, then shares it).");
  m.def("empty", &heap_empty, py::arg("shape"), py::arg("dtype"),
        "An uninitialised array in the registration-on-allocation heap.");

  py::class_<Comm>(m, "Comm")
      .def_static("from_env", &Comm::from_env,
                  "Joins the job the launcher describes (stratarun, torchrun, Open MPI, MPICH, "
                  "Slurm).")
      .def_static("init_rank", &Comm::init_rank, py::arg("nranks"), py::arg("unique_id"),
                  py::arg("rank"), py::arg("timeout_ms") = 0)
      .def_property_readonly("rank", &Comm::rank)
      .def_property_readonly("size", &Comm::size)
      .def("split", &Comm::split, py::arg("color"), py::arg("key"))
      .def("destroy", &Comm::destroy)
      .def("abort", &Comm::abort)
      .def("revoke", &Comm::revoke,
           "Every rank's pending and later calls on this communicator fail; shrink() and "
           "destroy() still work.")
      .def("shrink", &Comm::shrink, py::arg("exclude") = std::vector<int>{},
           py::arg("abort") = true,
           "The survivors' communicator: every rank not in `exclude` calls it, and they agree "
           "on who is gone (`exclude`, and the ranks found dead). abort=True revokes this one "
           "first, so calls still pending on it fail at once. Destroy this one afterwards.")
      .def("allreduce", &Comm::allreduce, py::arg("send"), py::arg("recv"), py::arg("op") = "sum")
      .def("reduce", &Comm::reduce, py::arg("send"), py::arg("recv"), py::arg("op") = "sum",
           py::arg("root") = 0)
      .def("broadcast", &Comm::broadcast, py::arg("buf"), py::arg("root") = 0)
      .def("allgather", &Comm::allgather, py::arg("send"), py::arg("recv"))
      .def("reduce_scatter", &Comm::reduce_scatter, py::arg("send"), py::arg("recv"),
           py::arg("op") = "sum")
      .def("alltoall", &Comm::alltoall, py::arg("send"), py::arg("recv"))
      .def("send", &Comm::send, py::arg("buf"), py::arg("peer"))
      .def("recv", &Comm::recv, py::arg("buf"), py::arg("peer"))
      .def("barrier", &Comm::barrier);
}
