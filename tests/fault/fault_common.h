// Shared helpers of the fault-test program: checks that print what failed and count failures.
#pragma once

#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "stratacl/stratacl.h"

namespace fault {

inline int g_failures = 0;
// Seconds on the monotonic clock: one clock for every process on the machine.
inline double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

inline int g_rank = -1;  // set by init_or_die

inline void expect(bool ok, const char* what, const std::string& detail = "") {
  if (!ok) {
    ++g_failures;
    std::fprintf(stderr, "rank %d: FAILED: %s %s\n", g_rank, what, detail.c_str());
  }
}

// Expects `r` == `want` and the last error text to contain `needle`.
inline void expect_error(sclResult_t r, sclResult_t want, sclComm_t comm, const char* needle,
                         const char* what) {
  const std::string msg = sclGetLastError(comm);
  expect(r == want, what,
         std::string("got ") + sclGetErrorString(r) + " (" + msg + "), want " +
             sclGetErrorString(want));
  if (r == want && needle && msg.find(needle) == std::string::npos) {
    expect(false, what, "message \"" + msg + "\" does not mention \"" + needle + "\"");
  }
}

inline sclComm_t init_or_die() {
  sclComm_t comm = nullptr;
  sclResult_t r = sclCommInitFromEnv(&comm);
  if (r != sclSuccess) {
    std::fprintf(stderr, "init failed: %s: %s\n", sclGetErrorString(r), sclGetLastError(nullptr));
    std::exit(2);
  }
  sclCommUserRank(comm, &g_rank);
  return comm;
}

int run_bad_arguments();
int run_mismatch();
// Across hosts (`hosts`), the refused rank revokes the communicator.
int run_one_rank_refused(bool hosts);
int run_group_failures();
// Across hosts, a message longer than its receive ends the communicator (the provider's limit).
int run_size_mismatch(bool across_hosts);
int run_kill_survivor(int victim, const std::string& phase);
int run_stopped_rank();
int run_peer_never_arrives();
int run_abort();
int run_destroy_during_call();
int run_cycles(int cycles);
int run_cma_refused();
// Ranks started with different STRATACL_EAGER_MAX_BYTES (set by the ctest entry): init must
// fail on every rank, naming the variable.
int run_settings_disagree(const char* expected_text);
int run_fork_child();
int run_read_only_heaps();
int run_abort_blocked(int iterations);
int run_init_interference();
int run_failed_init();
int run_split_failure();
int run_call_deadline();
int run_host_loss(double lost_s, bool abort_one);
int run_host_stall(double lost_s);
int run_stop_culprit();
int run_p2p_slot_status(int iterations);
// 4 ranks: `victim` dies mid-loop, `second` while it shrinks; times are written under `dir`.
int run_shrink(int victim, int second, const std::string& dir);
// 4 ranks: bad arguments, a healthy shrink, revocation, a survivor another one excludes.
int run_shrink_cases();
int run_send_abort(int iterations);
int run_moe_bad_arguments();
int run_moe_mismatch();

}  // namespace fault
