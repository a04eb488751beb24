// What every output of a run states about it (the table's first line, the CSV comment line and
// the JSON header; the memcpy figure comes after the rows), and the memcpy probe that gives the
// machine's copy bandwidth.
#ifndef STRATACL_TOOLS_SCL_BENCH_RUN_INFO_H_
#define STRATACL_TOOLS_SCL_BENCH_RUN_INFO_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace stratacl::bench {

struct RunInfo {
  int version = 0;  // as from sclGetVersion: major * 10000 + minor * 100 + patch
  int nranks = 0;
  std::string host;       // gethostname of rank 0
  std::string isa;        // reduction kernels in use: avx512, avx2 or scalar
  double memcpy_gbs = 0;  // single-thread memcpy bandwidth of rank 0, bytes copied per ns
  std::string mem;        // heap or malloc
  std::string mode;       // zerocopy, staged or cma
  int iters = 0;
  int warmup = 0;
  int repeats = 0;
  int check_iters = 0;  // checked calls per row (-c); 0: no check
  int agg_iters = 1;    // calls per timed iteration (-m)
  int unalign = 0;      // elements past the buffers' alignment (-u)
  std::string average;  // how the ranks' times combine (-a): rank0, mean, min or max
  std::string program;  // the name the tool was started by (scl-bench, all_reduce_perf, ...)
};

// "major.minor.patch" of an sclGetVersion code.
std::string version_string(int version);

// This host's name, or "unknown".
std::string host_name();

// The name of the reduction ISA the library dispatches to.
std::string reduction_isa();

// This process's resident set, in bytes (0 where /proc cannot tell).
uint64_t resident_bytes();

// Copies `bytes` between two pre-faulted buffers `tries` times on the calling thread and
// returns the best rate in GB/s (1e9 bytes copied per second); NaN, measuring nothing, in a
// sanitizer build (reported as nan, and null in JSON). Throws std::bad_alloc.
// The default is 256 MiB: on the 2-vCPU Xeon used here glibc's memcpy copies 64 MiB at 7-9 GB/s
// (varying run to run) but 256 MiB at a steady 11.3 GB/s (its large-copy path), and the
// memory-traffic model of bench/compare wants the best copy rate.
double measure_memcpy_gbs(size_t bytes = size_t{256} << 20, int tries = 3);

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_RUN_INFO_H_
