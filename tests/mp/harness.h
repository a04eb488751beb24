// Shared plumbing of mp_tests: the world communicator, fatal-error handling, pass/fail
// bookkeeping and the element-by-element comparison that every case uses.
//
// Model: every rank runs the same sequence of calls. A library call that returns an error is
// fatal for the rank (it prints the call, the error and the library's last-error text and exits
// 1; stratarun then fails the job and terminates the other ranks). A wrong output element is
// not fatal: it is counted, the first few are printed, and the case continues so that one run
// shows the whole picture. At the end the per-rank counts are summed with an allreduce and rank
// 0 prints the totals; a rank with any failure exits non-zero on its own as well, so a broken
// allreduce cannot hide failures.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/dtype.h"
#include "stratacl/stratacl.h"

namespace mp {

// A communicator with its rank and size cached.
struct Comm {
  sclComm_t comm = nullptr;
  int rank = 0;
  int n = 0;
};

// Fills rank and n from the library.
Comm describe(sclComm_t comm);

// The world communicator of this process (set by main before a case runs).
const Comm& world();
void set_world(const Comm& world);

// The program name that prefixes fatal messages ("mp_tests" unless set).
void set_program_name(const char* name);

[[noreturn]] void fatal(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
[[noreturn]] void fatal_call(const char* expr, sclResult_t r, const char* file, int line);

#define MP_OK(call)                                                              \
  do {                                                                           \
    const sclResult_t mp_r_ = (call);                                            \
    if (mp_r_ != sclSuccess) ::mp::fatal_call(#call, mp_r_, __FILE__, __LINE__); \
  } while (0)

// Test-independent names of the library's enums (the element types: core/dtype.h).
using stratacl::dtype_name;
using stratacl::dtype_size;
using stratacl::kAllDtypes;
const char* op_name(int op);  // -1 (no op) gives "-"
constexpr sclRedOp_t kAllOps[] = {sclSum, sclProd, sclMax, sclMin, sclAvg};

// What a check is about, for mismatch messages.
struct CallInfo {
  std::string coll;  // "allreduce", "p2p ring", ...
  sclDataType_t dtype = sclUint8;
  int op = -1;  // -1: not a reduction
  size_t count = 0;
  int root = -1;       // -1: not rooted
  std::string detail;  // buffers, placement, communicator, iteration...
  std::string text() const;
};

// Pass/fail bookkeeping of one process. A check is one output (or input, or guard) region of
// one call on one rank; it fails if any element in it is wrong.
class Tally {
 public:
  // Compares `elems` elements of `got` against `want` (both element arrays of `dtype`); element
  // k is reported as index first_index + k of `region`. Counts the check as passed or failed,
  // prints the first few mismatches, and returns the number of wrong elements.
  uint64_t compare(const CallInfo& info, const char* region, const void* got, const void* want,
                   size_t elems, long long first_index = 0);
  // The same without counting a check: for checks made of several regions, which then call
  // record() once with the sum.
  uint64_t count_wrong(const CallInfo& info, const char* region, const void* got, const void* want,
                       size_t elems, long long first_index = 0);
  void record(uint64_t wrong) { ++(wrong ? failed_ : passed_); }
  // A check decided by the caller (e.g. a return code or a rank number).
  void expect(bool ok, const CallInfo& info, const std::string& what);

  uint64_t passed() const { return passed_; }
  uint64_t failed() const { return failed_; }
  uint64_t wrong_elements() const { return wrong_elements_; }
  uint64_t elements() const { return elements_; }

 private:
  uint64_t passed_ = 0, failed_ = 0, wrong_elements_ = 0, elements_ = 0;
  int lines_printed_ = 0;
};

Tally& global_tally();

// Sums the tallies of all ranks over `world` and prints, on rank 0,
//   mp_tests <name>: <passed> checks passed  (or: <failed> of <total> checks FAILED)
//   <passed> passed, <failed> failed
// Returns the exit status of this rank: non-zero if this rank or any rank failed.
int finish(const char* name);

// Seconds since an arbitrary start, monotonic.
double now();

}  // namespace mp
