// MPI peer of scl-bench moe: the same workload, buffers, timing loop, row checks, DeepEP byte
// counts and CSV (tools/moe_workload), with the buffer-centric exchange (pack + alltoallv +
// unpack) over MPI_Alltoall/MPI_Alltoallv, for Open MPI and MPICH alike. Combine's rows are summed
// with StrataCL's reduction kernels, as scl-bench's own baselines do, so that the comparison
// measures the communication. One source, built twice by bench/compare-moe:
//
//   mpicxx.openmpi -O2 -std=c++20 -ffp-contract=off -I . -I src -I include
//       -I tools/moe_workload bench/peers/mpi_moe_bench.cc tools/moe_workload/*.cc
//       tools/scl_bench/moe_options.cc build/src/libstratacl.a -lpthread -o mpi_moe_bench.openmpi
//   mpirun.openmpi -np 4 ./mpi_moe_bench.openmpi openmpi --tokens 4096 --csv out.csv
//
// Buffers come from malloc (MPI has no registered-on-allocation heap); both libraries run with
// their default tuning.
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "measure.h"
#include "tools/scl_bench/library_sum.h"
#include "tools/scl_bench/moe_options.h"

namespace {

using moe_workload::Buffers;
using moe_workload::Shape;
using moe_workload::Workload;

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  std::fprintf(stderr, "mpi_moe_bench: %s failed: %s\n", what, text);
  MPI_Abort(MPI_COMM_WORLD, 3);
}

std::vector<int> as_int(const size_t* v, int n) {
  std::vector<int> r(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    if (v[i] > size_t(INT_MAX)) throw std::runtime_error("alltoallv counts beyond INT_MAX bytes");
    r[size_t(i)] = int(v[i]);
  }
  return r;
}

class MpiTransport : public moe_workload::Transport, public moe_workload::Group {
 public:
  explicit MpiTransport(int nranks) : n_(nranks) {}
  void* alloc(size_t bytes) override {
    void* p = nullptr;
    if (posix_memalign(&p, 64, bytes) != 0) throw std::runtime_error("posix_memalign failed");
    return p;
  }
  void release(void* p) override { free(p); }
  void alltoall_counts(const int64_t* send, int64_t* recv) override {
    check(MPI_Alltoall(send, 1, MPI_INT64_T, recv, 1, MPI_INT64_T, MPI_COMM_WORLD), "MPI_Alltoall");
  }
  void alltoallv(const void* send, const size_t* send_bytes, const size_t* send_at, void* recv,
                 const size_t* recv_bytes, const size_t* recv_at) override {
    const std::vector<int> sc = as_int(send_bytes, n_), sd = as_int(send_at, n_),
                           rc = as_int(recv_bytes, n_), rd = as_int(recv_at, n_);
    check(MPI_Alltoallv(send, sc.data(), sd.data(), MPI_BYTE, recv, rc.data(), rd.data(), MPI_BYTE,
                        MPI_COMM_WORLD),
          "MPI_Alltoallv");
  }
  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  double max(double v) override {
    double r = 0;
    check(MPI_Allreduce(&v, &r, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    return r;
  }
  uint64_t sum(uint64_t v) override {
    uint64_t r = 0;
    check(MPI_Allreduce(&v, &r, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    return r;
  }

 private:
  int n_;
};

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int nranks = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc < 2) {
    if (rank == 0) std::fprintf(stderr, "usage: mpi_moe_bench NAME [scl-bench moe options]\n");
    MPI_Finalize();
    return 2;
  }
  const std::string name = argv[1];
  stratacl::bench::MoeOptions o;
  bool help = false;
  const std::string error = stratacl::bench::parse_moe_options(argc - 1, argv + 1, &o, &help);
  if (!error.empty() || help || o.experts % nranks != 0) {
    if (rank == 0)
      std::fprintf(stderr, "mpi_moe_bench: %s\n", error.empty() ? "bad options" : error.c_str());
    MPI_Finalize();
    return 2;
  }
  MpiTransport mpi(nranks);
  std::vector<std::string> csv;
  uint64_t wrong = 0;
  try {
    for (bool expert_major : o.expert_major) {
      Shape shape(nranks, rank, o.hidden, o.topk, o.experts, o.tokens > 0 ? o.tokens : 1);
      shape.x_type = o.x, shape.recv_type = o.recv, shape.out_type = o.out;
      shape.expert_major = expert_major;
      const Workload work(shape, o.routing, std::vector<int>(size_t(nranks), o.tokens), o.seed);
      Buffers buffers(
          work, true, [&](size_t b) { return mpi.alloc(b); }, [&](void* p) { mpi.release(p); });
      moe_workload::ExchangeMethod method(shape, mpi, buffers, stratacl::bench::library_sum);
      for (int pass = 0; pass < o.repeats; ++pass) {
        const moe_workload::Times t = moe_workload::time_method(mpi, method, o.warmup, o.iters);
        csv.push_back(moe_workload::csv_row(name, work, o.routing_text, "dispatch", t.dispatch_us,
                                            moe_workload::dispatch_bytes_per_rank(work), pass));
        csv.push_back(moe_workload::csv_row(name, work, o.routing_text, "combine", t.combine_us,
                                            moe_workload::combine_bytes_per_rank(work), pass));
        if (pass == 0 && o.check) {
          std::string first;
          const uint64_t mine = moe_workload::wrong_dispatch(work, buffers, true, &first) +
                                moe_workload::wrong_combine(work, buffers, &first);
          if (mine)
            std::fprintf(stderr, "mpi_moe_bench: rank %d: %llu wrong, first at %s\n", rank,
                         (unsigned long long)mine, first.c_str());
          wrong += mpi.sum(mine);
        }
        if (rank == 0) {
          std::printf("%s %s pass %d: dispatch %.1f us, combine %.1f us\n", name.c_str(),
                      expert_major ? "expert-major" : "token-major", pass, t.dispatch_us,
                      t.combine_us);
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpi_moe_bench: rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  if (rank == 0 && !o.csv_path.empty()) {
    std::ofstream f(o.csv_path);
    f << moe_workload::csv_header() << "\n";
    for (const std::string& line : csv) f << line << "\n";
  }
  if (rank == 0)
    std::printf("%s: %s\n", name.c_str(), wrong ? "WRONG RESULTS" : "every row checked: ok");
  MPI_Finalize();
  return wrong ? 1 : 0;
}
