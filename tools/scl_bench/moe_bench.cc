#include "moe_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "errors.h"
#include "library_sum.h"
#include "measure.h"
#include "moe_options.h"
#include "scl_transport.h"

namespace stratacl::bench {
namespace {

using moe_workload::Buffers;
using moe_workload::Shape;
using moe_workload::Workload;

class SclGroup : public moe_workload::Group {
 public:
  explicit SclGroup(sclComm_t comm) : comm_(comm) {
    require(sclMemAlloc(reinterpret_cast<void**>(&cell_), 64), "sclMemAlloc");
  }
  ~SclGroup() override { sclMemFree(cell_); }
  void barrier() override { require(sclBarrier(comm_, nullptr), "sclBarrier"); }
  double max(double v) override {
    std::memcpy(cell_, &v, 8);
    require(sclAllReduce(cell_, cell_, 1, sclFloat64, sclMax, comm_, nullptr), "sclAllReduce");
    std::memcpy(&v, cell_, 8);
    return v;
  }
  uint64_t sum(uint64_t v) override {
    std::memcpy(cell_, &v, 8);
    require(sclAllReduce(cell_, cell_, 1, sclUint64, sclSum, comm_, nullptr), "sclAllReduce");
    std::memcpy(&v, cell_, 8);
    return v;
  }

 private:
  sclComm_t comm_;
  char* cell_ = nullptr;
};

// sclMoeDispatch and sclMoeCombine; each dispatch makes a new handle (the old one destroyed).
class StrataMethod : public moe_workload::Method {
 public:
  StrataMethod(sclComm_t comm, const Shape& shape, const Buffers& buffers) : buffers_(buffers) {
    const sclMoeConfig_t config = shape.config();
    require(sclMoeCreate(comm, &config, &moe_), "sclMoeCreate");
  }
  ~StrataMethod() override {
    if (handle_) sclMoeHandleDestroy(handle_);
    sclMoeDestroy(moe_);
  }
  void dispatch() override {
    if (handle_) require(sclMoeHandleDestroy(handle_), "sclMoeHandleDestroy");
    handle_ = nullptr;
    const sclMoeTokens_t in = buffers_.tokens();
    sclMoeRecv_t out = buffers_.recv();
    require(sclMoeDispatch(moe_, &in, &out, &handle_, nullptr), "sclMoeDispatch");
  }
  void combine() override {
    require(sclMoeCombine(moe_, handle_, buffers_.expert_out(), buffers_.combine_weights(),
                          buffers_.combined(), nullptr),
            "sclMoeCombine");
  }

 private:
  const Buffers& buffers_;
  sclMoe_t moe_ = nullptr;
  sclMoeHandle_t handle_ = nullptr;
};

void* heap_alloc(size_t bytes) {
  void* p = nullptr;
  require(sclMemAlloc(&p, bytes), "sclMemAlloc");
  return p;
}
void heap_release(void* p) { sclMemFree(p); }
void* malloc_alloc(size_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, 64, bytes) != 0) throw LibraryError(sclSystemError, "posix_memalign");
  return p;
}

bool is_baseline(const std::string& method) { return method.rfind("alltoallv", 0) == 0; }
bool on_heap(const std::string& method) {
  return method == "stratacl" || method == "alltoallv-heap";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Result {
  std::vector<double> dispatch_us, combine_us;
  uint64_t wrong = 0;
  bool checked = false;
};

// One layout: every method timed in every pass (interleaved), checked after its first.
class LayoutRun {
 public:
  LayoutRun(const MoeOptions& o, sclComm_t comm, int nranks, int rank, bool expert_major)
      : o_(o),
        comm_(comm),
        group_(comm),
        shape_(make_shape(o, nranks, rank, expert_major)),
        work_(shape_, o.routing, std::vector<int>(size_t(nranks), o.tokens), o.seed) {}

  // Returns wrong elements over all ranks and methods.
  uint64_t run(std::vector<std::string>* csv, bool print) {
    const bool weights = true;
    std::unique_ptr<Buffers> heap, malloced;
    for (const std::string& m : o_.methods) {
      std::unique_ptr<Buffers>& b = on_heap(m) ? heap : malloced;
      if (!b) {
        b = std::make_unique<Buffers>(work_, weights, on_heap(m) ? heap_alloc : malloc_alloc,
                                      on_heap(m) ? heap_release : free);
      }
    }
    moe_workload::SclTransport heap_transport(comm_, true), malloc_transport(comm_, false);
    std::map<std::string, std::unique_ptr<moe_workload::Method>> methods;
    for (const std::string& m : o_.methods) {
      const Buffers& b = on_heap(m) ? *heap : *malloced;
      if (is_baseline(m)) {
        methods[m] = std::make_unique<moe_workload::ExchangeMethod>(
            shape_, m == "alltoallv-heap" ? heap_transport : malloc_transport, b, library_sum);
      } else {
        methods[m] = std::make_unique<StrataMethod>(comm_, shape_, b);
      }
    }
    std::map<std::string, Result> results;
    for (int pass = 0; pass < o_.repeats; ++pass) {
      for (const std::string& m : o_.methods) {
        const moe_workload::Times t =
            moe_workload::time_method(group_, *methods[m], o_.warmup, o_.iters);
        Result& r = results[m];
        r.dispatch_us.push_back(t.dispatch_us);
        r.combine_us.push_back(t.combine_us);
        csv->push_back(moe_workload::csv_row(m, work_, o_.routing_text, "dispatch", t.dispatch_us,
                                             moe_workload::dispatch_bytes_per_rank(work_), pass));
        csv->push_back(moe_workload::csv_row(m, work_, o_.routing_text, "combine", t.combine_us,
                                             moe_workload::combine_bytes_per_rank(work_), pass));
        if (pass == 0 && o_.check) {
          std::string first;
          const Buffers& b = on_heap(m) ? *heap : *malloced;
          uint64_t wrong = moe_workload::wrong_dispatch(work_, b, weights, &first) +
                           moe_workload::wrong_combine(work_, b, &first);
          if (wrong) {
            std::fprintf(stderr, "scl-bench moe: rank %d: %s: %llu wrong, first at %s\n",
                         shape_.rank, m.c_str(), (unsigned long long)wrong, first.c_str());
          }
          r.wrong = group_.sum(wrong);
          r.checked = true;
        }
      }
    }
    if (print) print_table(results);
    uint64_t wrong = 0;
    for (auto& [m, r] : results) wrong += r.wrong;
    return wrong;
  }

 private:
  static Shape make_shape(const MoeOptions& o, int nranks, int rank, bool expert_major) {
    Shape s(nranks, rank, o.hidden, o.topk, o.experts, std::max(o.tokens, 1));
    s.x_type = o.x, s.recv_type = o.recv, s.out_type = o.out;
    s.expert_major = expert_major;
    return s;
  }

  void print_table(const std::map<std::string, Result>& results) const {
    const double dbytes = moe_workload::dispatch_bytes_per_rank(work_);
    const double cbytes = moe_workload::combine_bytes_per_rank(work_);
    std::printf(
        "#\n# layout %s (%s): %d ranks, T=%d per rank, H=%d, top-%d of %d experts, "
        "routing %s, x %s -> %s, out %s\n",
        shape_.expert_major ? "expert-major" : "token-major",
        shape_.expert_major ? "DeepEP low latency" : "DeepEP normal", shape_.nranks, o_.tokens,
        o_.hidden, o_.topk, o_.experts, o_.routing_text.c_str(), dtype_name(o_.x),
        dtype_name(o_.recv), dtype_name(o_.out));
    std::printf(
        "# bytes per rank: dispatch %.1f MB, combine %.1f MB (median of %d passes, "
        "slowest rank, %d calls each)\n",
        dbytes * 1e-6, cbytes * 1e-6, o_.repeats, o_.iters);
    std::printf("# %-9s %-18s %12s %10s %14s %8s\n", "call", "method", "time(us)", "GB/s",
                "x best-alltoallv", "check");
    for (const char* call : {"dispatch", "combine", "both"}) {
      double best = 0;
      for (const auto& [m, r] : results) {
        if (!is_baseline(m)) continue;
        const double t = time_of(r, call);
        if (best == 0 || t < best) best = t;
      }
      for (const auto& [m, r] : results) {
        const double t = time_of(r, call);
        const double bytes = std::string(call) == "dispatch"  ? dbytes
                             : std::string(call) == "combine" ? cbytes
                                                              : dbytes + cbytes;
        char ratio[32] = "-";
        if (!is_baseline(m) && best > 0) {
          std::snprintf(ratio, sizeof ratio, "%.2fx %s", best / t,
                        best / t >= 1.4 ? "(>=1.4)" : "(<1.4)");
        }
        std::printf("  %-9s %-18s %12.1f %10.2f %14s %8s\n", call, m.c_str(), t, bytes / t * 1e-3,
                    ratio,
                    !r.checked ? "-"
                    : r.wrong  ? "WRONG"
                               : "ok");
      }
    }
  }

  static double time_of(const Result& r, const std::string& call) {
    if (call == "dispatch") return median(r.dispatch_us);
    if (call == "combine") return median(r.combine_us);
    std::vector<double> both;
    for (size_t i = 0; i < r.dispatch_us.size(); ++i)
      both.push_back(r.dispatch_us[i] + r.combine_us[i]);
    return median(both);
  }

  const MoeOptions& o_;
  sclComm_t comm_;
  SclGroup group_;
  Shape shape_;
  Workload work_;
};

}  // namespace

int run_moe_main(int argc, char** argv) {
  MoeOptions options;
  bool help = false;
  if (std::string error = parse_moe_options(argc, argv, &options, &help); !error.empty()) {
    std::fprintf(stderr, "scl-bench moe: %s\nRun 'scl-bench moe -h' for usage.\n", error.c_str());
    return 2;
  }
  if (help) {
    std::fputs(moe_usage_text().c_str(), stdout);
    return 0;
  }
  sclComm_t comm = nullptr;
  try {
    require(sclCommInitFromEnv(&comm), "sclCommInitFromEnv");
    int nranks = 0, rank = 0;
    require(sclCommCount(comm, &nranks), "sclCommCount");
    require(sclCommUserRank(comm, &rank), "sclCommUserRank");
    if (options.experts % nranks != 0) {
      if (rank == 0)
        std::fprintf(stderr, "scl-bench moe: --experts %d is not a multiple of %d ranks\n",
                     options.experts, nranks);
      sclCommDestroy(comm);
      return 2;
    }
    if (rank == 0) std::printf("# scl-bench moe: %d ranks\n", nranks);
    std::vector<std::string> csv;
    uint64_t wrong = 0;
    for (bool expert_major : options.expert_major) {
      wrong += LayoutRun(options, comm, nranks, rank, expert_major).run(&csv, rank == 0);
    }
    if (rank == 0 && !options.csv_path.empty()) {
      std::ofstream f(options.csv_path);
      f << moe_workload::csv_header() << "\n";
      for (const std::string& line : csv) f << line << "\n";
      if (!f) std::fprintf(stderr, "scl-bench moe: cannot write %s\n", options.csv_path.c_str());
    }
    if (rank == 0) std::printf("# %s\n", wrong ? "WRONG RESULTS" : "every row checked: ok");
    sclComm_t done = comm;
    comm = nullptr;
    require(sclCommDestroy(done), "sclCommDestroy");
    return wrong ? 1 : 0;
  } catch (const LibraryError& error) {
    const char* detail = error.detail().empty() ? sclGetLastError(comm) : error.detail().c_str();
    std::fprintf(stderr, "scl-bench moe: %s failed: %s: %s\n", error.call().c_str(),
                 sclGetErrorString(error.result()), detail);
    if (comm) sclCommAbort(comm);
    return 3;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "scl-bench moe: %s\n", error.what());
    if (comm) sclCommAbort(comm);
    return 3;
  }
}

}  // namespace stratacl::bench
