#include "overlap_bench.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/byte_size.h"
#include "errors.h"

namespace stratacl::bench {
namespace {

struct Options {
  long long bytes = 64 << 20;  // allreduce payload per rank
  int matrix = 512;            // n of the n x n float matrix multiply
  int repeats = 7;
  std::string csv;
  std::string label = "stratacl";
};

int usage() {
  std::fprintf(stderr,
               "usage: stratarun -n R scl-bench overlap [--bytes SIZE] [--matrix N] "
               "[--repeats N] [--label TEXT] [--csv FILE]\n"
               "  --bytes SIZE   allreduce payload per rank, float32 sum (default 64M)\n"
               "  --matrix N     compute: an N x N x N float matrix multiply (default 512)\n"
               "  --repeats N    medians over N measurements of each (default 7)\n"
               "  --label TEXT   the CSV's configuration column (default stratacl)\n");
  return 2;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// c = a x b, blocked for the caches: the compute the allreduce should hide behind.
void matmul(const float* a, const float* b, float* c, int n) {
  constexpr int kBlock = 64;
  std::fill(c, c + size_t(n) * size_t(n), 0.0f);
  for (int i0 = 0; i0 < n; i0 += kBlock)
    for (int k0 = 0; k0 < n; k0 += kBlock)
      for (int j0 = 0; j0 < n; j0 += kBlock)
        for (int i = i0; i < std::min(n, i0 + kBlock); ++i)
          for (int k = k0; k < std::min(n, k0 + kBlock); ++k) {
            const float aik = a[size_t(i) * size_t(n) + size_t(k)];
            float* ci = c + size_t(i) * size_t(n);
            const float* bk = b + size_t(k) * size_t(n);
            for (int j = j0; j < std::min(n, j0 + kBlock); ++j) ci[j] += aik * bk[j];
          }
}

class Overlap {
 public:
  Overlap(sclComm_t comm, const Options& o) : comm_(comm), o_(o) {
    require(sclCommUserRank(comm, &rank_), "sclCommUserRank");
    require(sclCommCount(comm, &nranks_), "sclCommCount");
    count_ = size_t(o.bytes) / sizeof(float);
    require(sclMemAlloc(reinterpret_cast<void**>(&send_), count_ * 4 + 64), "sclMemAlloc");
    require(sclMemAlloc(reinterpret_cast<void**>(&recv_), count_ * 4 + 64), "sclMemAlloc");
    for (size_t i = 0; i < count_; ++i) send_[i] = float((i + size_t(rank_)) % 7);
    const size_t nn = size_t(o.matrix) * size_t(o.matrix);
    a_.assign(nn, 1.0f), b_.assign(nn, 0.5f), c_.assign(nn, 0.0f);
    require(sclStreamCreate(&stream_), "sclStreamCreate");
  }
  ~Overlap() {
    sclStreamDestroy(stream_);
    sclMemFree(cell_);
    sclMemFree(send_);
    sclMemFree(recv_);
  }

  double comm_alone() {
    poison();
    barrier();
    const auto t0 = std::chrono::steady_clock::now();
    enqueue();
    require(sclStreamSynchronize(stream_), "sclStreamSynchronize");
    return slowest(seconds_since(t0));
  }
  double comp_alone() {
    barrier();
    const auto t0 = std::chrono::steady_clock::now();
    matmul(a_.data(), b_.data(), c_.data(), o_.matrix);
    return slowest(seconds_since(t0));
  }
  double both() {
    poison();
    barrier();
    const auto t0 = std::chrono::steady_clock::now();
    enqueue();
    matmul(a_.data(), b_.data(), c_.data(), o_.matrix);
    require(sclStreamSynchronize(stream_), "sclStreamSynchronize");
    return slowest(seconds_since(t0));
  }
  // Every element of the last allreduce: sum over ranks of (i + r) % 7.
  size_t wrong() const {
    size_t bad = 0;
    for (size_t i = 0; i < count_; ++i) {
      float want = 0;
      for (int r = 0; r < nranks_; ++r) want += float((i + size_t(r)) % 7);
      bad += recv_[i] != want;
    }
    return bad;
  }
  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

 private:
  // Before the clock starts: stale results would fail the check.
  void poison() { std::memset(recv_, 0xff, count_ * 4); }
  void enqueue() {
    require(sclAllReduce(send_, recv_, count_, sclFloat32, sclSum, comm_, stream_), "sclAllReduce");
  }
  void barrier() { require(sclBarrier(comm_, nullptr), "sclBarrier"); }
  // The slowest rank's time: the call is done when every rank is.
  double slowest(double s) {
    if (!cell_) require(sclMemAlloc(reinterpret_cast<void**>(&cell_), 64), "sclMemAlloc");
    cell_[0] = s;
    require(sclAllReduce(cell_, cell_, 1, sclFloat64, sclMax, comm_, nullptr), "sclAllReduce");
    return cell_[0];
  }

  sclComm_t comm_;
  const Options& o_;
  int rank_ = 0, nranks_ = 0;
  size_t count_ = 0;
  float *send_ = nullptr, *recv_ = nullptr;
  double* cell_ = nullptr;
  std::vector<float> a_, b_, c_;
  sclStream_t stream_ = nullptr;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return false;
    const char* v = argv[++i];
    long long n = 0;
    if (a == "--bytes") {
      if (scl_parse_byte_size(v, &n) != 0 || n < 4) return false;
      o->bytes = n;
    } else if (a == "--matrix") {
      o->matrix = std::atoi(v);
      if (o->matrix < 8 || o->matrix > 8192) return false;
    } else if (a == "--repeats") {
      o->repeats = std::atoi(v);
      if (o->repeats < 1) return false;
    } else if (a == "--csv") {
      o->csv = v;
    } else if (a == "--label") {
      o->label = v;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

int run_overlap_main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) return usage();
  sclComm_t comm = nullptr;
  try {
    require(sclCommInitFromEnv(&comm), "sclCommInitFromEnv");
    size_t wrong = 0;
    double comm_s, comp_s, both_s;
    {
      Overlap run(comm, o);
      run.comm_alone();  // warm-up: page faults, helpers, engines
      run.comp_alone();
      std::vector<double> tc, tp, tb;
      for (int r = 0; r < o.repeats; ++r) {
        tc.push_back(run.comm_alone());
        wrong += run.wrong();
        tp.push_back(run.comp_alone());
        tb.push_back(run.both());
        wrong += run.wrong();
      }
      comm_s = median(tc), comp_s = median(tp), both_s = median(tb);
      if (run.rank() == 0) {
        const double eff = (comm_s + comp_s - both_s) / std::min(comm_s, comp_s);
        std::printf(
            "overlap %s ranks=%d bytes=%lld matrix=%d: comm %.0f us, comp %.0f us, both "
            "%.0f us, efficiency %.2f, %s\n",
            o.label.c_str(), run.nranks(), o.bytes, o.matrix, comm_s * 1e6, comp_s * 1e6,
            both_s * 1e6, eff, wrong ? "WRONG" : "every element checked: ok");
        if (!o.csv.empty()) {
          FILE* f = std::fopen(o.csv.c_str(), "a");
          if (!f) throw LibraryError(sclSystemError, "fopen", o.csv);
          std::fprintf(f, "%s,%d,%lld,%d,%.1f,%.1f,%.1f,%.3f,%zu\n", o.label.c_str(), run.nranks(),
                       o.bytes, o.matrix, comm_s * 1e6, comp_s * 1e6, both_s * 1e6, eff, wrong);
          std::fclose(f);
        }
      }
    }
    require(sclCommDestroy(comm), "sclCommDestroy");
    return wrong ? 1 : 0;
  } catch (const LibraryError& error) {
    const char* detail = error.detail().empty() ? sclGetLastError(comm) : error.detail().c_str();
    std::fprintf(stderr, "scl-bench overlap: %s failed: %s: %s\n", error.call().c_str(),
                 sclGetErrorString(error.result()), detail);
    if (comm != nullptr) sclCommAbort(comm);
    return 3;
  }
}

}  // namespace stratacl::bench
