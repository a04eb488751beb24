// A job that survives dead ranks: a loop of allreduces on 4 ranks; one rank SIGKILLs itself
// mid-loop, the survivors shrink the communicator (SCL_SHRINK_ABORT) and finish the loop on it
// with every element checked; a second rank SIGKILLs itself from a thread while it shrinks, so
// it dies before, during or after the agreement: the survivors must come out with the same
// communicator (or a call on it names the death and they shrink again) and finish the loop.
// Buffers are heap buffers made before the first death, used throughout.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "fault_common.h"

namespace fault {
namespace {

constexpr int kIterations = 300;
constexpr size_t kCount = 1000;

float value_of(int world_rank, int it, size_t i) {
  return float((world_rank + 1) * (1 + int(i % 13)) + it % 7);
}

// The world ranks of the communicator's members, in its rank order: -1 on failure.
std::vector<int> members_of(sclComm_t comm, int world_rank, int* ok) {
  int n = 0;
  sclCommCount(comm, &n);
  std::vector<int> all(size_t(n), -1);
  int* buf = nullptr;
  sclMemAlloc(reinterpret_cast<void**>(&buf), sizeof(int) * size_t(n + 1));
  buf[n] = world_rank;
  *ok = sclAllGather(buf + n, buf, 1, sclInt32, comm, nullptr) == sclSuccess;
  for (int i = 0; i < n; ++i) all[size_t(i)] = buf[i];
  sclMemFree(buf);
  return all;
}

void write_time(const std::string& path, double t) {
  FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return;
  std::fprintf(f, "%.9f\n", t);
  std::fclose(f);
}

double read_time(const std::string& path) {
  double t = 0;
  FILE* f = std::fopen(path.c_str(), "r");
  if (!f) return 0;
  if (std::fscanf(f, "%lf", &t) != 1) t = 0;
  std::fclose(f);
  return t;
}

}  // namespace

int run_shrink(int victim, int second, const std::string& dir) {
  sclComm_t comm = init_or_die();
  const int world_rank = g_rank;
  int world = 0;
  sclCommCount(comm, &world);
  float *x, *y;
  sclMemAlloc(reinterpret_cast<void**>(&x), kCount * sizeof(float));
  sclMemAlloc(reinterpret_cast<void**>(&y), kCount * sizeof(float));
  std::vector<int> members(static_cast<size_t>(world), 0);
  for (int r = 0; r < world; ++r) members[size_t(r)] = r;
  int shrinks = 0;
  double failed_at = 0;              // when the last failure was seen; 0 after the next success
  std::vector<double> recovered_at;  // the first good call after each failure
  std::string death = dir + "/death" + std::to_string(victim);
  std::string second_death = dir + "/death" + std::to_string(second);
  bool second_armed = true;
  for (int it = 0; it < kIterations;) {
    if (world_rank == victim && it == kIterations / 3) {
      write_time(death, now_s());
      raise(SIGKILL);
    }
    for (size_t i = 0; i < kCount; ++i) x[i] = value_of(world_rank, it, i);
    const sclResult_t r = sclAllReduce(x, y, kCount, sclFloat32, sclSum, comm, nullptr);
    if (r == sclSuccess) {
      for (size_t i = 0; i < kCount; ++i) {
        float want = 0;
        for (int m : members) want += value_of(m, it, i);
        if (y[i] != want) {
          expect(false, "allreduce element",
                 "iteration " + std::to_string(it) + " element " + std::to_string(i) + ": " +
                     std::to_string(y[i]) + " want " + std::to_string(want));
          break;
        }
      }
      if (failed_at > 0) {
        recovered_at.push_back(now_s());
        failed_at = 0;
      }
      ++it;
      continue;
    }
    const std::string msg = sclGetLastError(comm);
    expect(r == sclRemoteError, "a death fails the call with sclRemoteError", msg);
    failed_at = now_s();
    // Shrink: the second victim dies from a thread while it shrinks (its first shrink only).
    if (world_rank == second && second_armed) {
      second_armed = false;
      std::mt19937 rng{static_cast<unsigned>(getpid())};
      const int delay_us = int(rng() % 3000);
      std::thread([delay_us, second_death] {
        std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
        write_time(second_death, now_s());
        raise(SIGKILL);
      }).detach();
    }
    // The rank named in the error is excluded; the others are found by the agreement.
    std::vector<int> exclude;
    int n = 0;
    sclCommCount(comm, &n);
    for (int m = 0; m < n; ++m) {
      if (members[size_t(m)] == victim &&
          msg.find("rank " + std::to_string(m) + " ") != std::string::npos)
        exclude.push_back(m);
    }
    sclComm_t child = nullptr;
    const double t0 = now_s();
    const sclResult_t s =
        sclCommShrink(comm, exclude.data(), int(exclude.size()), &child, nullptr, SCL_SHRINK_ABORT);
    const double took = now_s() - t0;
    // The second victim dies from its thread; should its shrink end first, it waits for that
    // here instead of going on: on a loaded machine the thread may run only after the loop's
    // end, and then the survivors would see no second death.
    if (world_rank == second) {
      for (;;) pause();
    }
    if (s != sclSuccess) {
      expect(false, "shrink", std::string(sclGetErrorString(s)) + ": " + sclGetLastError(comm));
      break;
    }
    ++shrinks;
    int child_n = 0, child_rank = -1;
    sclCommCount(child, &child_n);
    sclCommUserRank(child, &child_rank);
    std::printf("rank %d: shrink %d: %d of %d ranks remain, this one is rank %d (%.2f ms)\n",
                world_rank, shrinks, child_n, n, child_rank, took * 1e3);
    expect(sclCommDestroy(comm) == sclSuccess, "destroying the parent after the shrink");
    comm = child;
    int ok = 0;
    members = members_of(comm, world_rank, &ok);
    if (!ok) continue;  // a member died after the agreement: the next call fails, shrink again
    expect(members[size_t(child_rank)] == world_rank, "this rank's place in the child");
    for (int m : members) expect(m != victim, "the first victim is not a member");
  }
  int final_n = 0;
  sclCommCount(comm, &final_n);
  expect(final_n == world - 2, "both victims are gone from the final communicator",
         std::to_string(final_n));
  for (int m : members) expect(m != victim && m != second, "no victim in the final communicator");
  // From each death (the victims wrote the time just before it) to the first good call after.
  auto recovery_ms = [&](double died) {
    for (double t : recovered_at)
      if (died > 0 && t > died) return (t - died) * 1e3;
    return -1.0;
  };
  const double first_ms = recovery_ms(read_time(death)),
               second_ms = recovery_ms(read_time(second_death));
  std::printf(
      "rank %d: SHRUNK: %d iterations checked, %d shrinks, final size %d; from the first death to "
      "the first good call %.1f ms, from the second %.1f ms\n",
      world_rank, kIterations, shrinks, final_n, first_ms, second_ms);
  expect(first_ms > 0 && second_ms > 0, "a good call after each death");
  sclMemFree(x);
  sclMemFree(y);
  expect(sclCommDestroy(comm) == sclSuccess, "destroy");
  return g_failures ? 1 : 0;
}

}  // namespace fault

namespace fault {
namespace {

// An allreduce of each member's world rank + 1 over `comm`, checked against `members`.
bool sums_right(sclComm_t comm, const std::vector<int>& members, int world_rank) {
  float* v = nullptr;
  sclMemAlloc(reinterpret_cast<void**>(&v), 64 * sizeof(float));
  for (int i = 0; i < 64; ++i) v[i] = float(world_rank + 1);
  const sclResult_t r = sclAllReduce(v, v, 64, sclFloat32, sclSum, comm, nullptr);
  float want = 0;
  for (int m : members) want += float(m + 1);
  bool ok = r == sclSuccess;
  for (int i = 0; i < 64 && ok; ++i) ok = v[i] == want;
  sclMemFree(v);
  return ok;
}

}  // namespace

// 4 ranks, no deaths: bad arguments; a shrink of a healthy communicator that leaves rank 3 out
// (which destroys it instead); a revocation, then a shrink that keeps everyone; a survivor that
// another survivor excludes.
int run_shrink_cases() {
  sclComm_t comm = init_or_die();
  const int me = g_rank;
  sclComm_t child = nullptr;
  const int other = (me + 1) % 4;
  int list[4] = {other, other, 9, me};
  struct Bad {
    int* list;
    int count, flags;
    sclComm_t* out;
    const char* names;
  } bad[] = {
      {list, 1, 7, &child, "shrinkFlags"},
      {list, -1, SCL_SHRINK_DEFAULT, &child, "excludeRanksCount"},
      {list, 4, SCL_SHRINK_DEFAULT, &child, "excludeRanksCount"},
      {nullptr, 1, SCL_SHRINK_DEFAULT, &child, "excludeRanksList"},
      {list, 2, SCL_SHRINK_DEFAULT, &child, "listed twice"},
      {list + 2, 1, SCL_SHRINK_DEFAULT, &child, "out of range"},
      {list, 1, SCL_SHRINK_DEFAULT, nullptr, "newcomm"},
      {list + 3, 1, SCL_SHRINK_ABORT, &child, "this rank"},
  };
  for (const Bad& b : bad) {
    expect_error(sclCommShrink(comm, b.list, b.count, b.out, nullptr, b.flags), sclInvalidArgument,
                 comm, b.names, b.names);
  }
  expect_error(sclCommRevoke(comm, 1), sclInvalidArgument, comm, "revokeFlags", "revoke flags");
  expect_error(sclCommShrink(nullptr, nullptr, 0, &child, nullptr, 0), sclInvalidArgument, nullptr,
               "comm", "NULL communicator");
  expect(sums_right(comm, {0, 1, 2, 3}, me), "the communicator after the refused calls");

  // A healthy communicator shrinks without rank 3, which destroys it instead.
  int three = 3;
  if (me == 3) {
    expect(sclCommDestroy(comm) == sclSuccess, "rank 3 destroys the parent");
  } else {
    expect(sclCommShrink(comm, &three, 1, &child, nullptr, SCL_SHRINK_DEFAULT) == sclSuccess,
           "shrink without rank 3", sclGetLastError(comm));
    int n = 0, r = -1;
    sclCommCount(child, &n);
    sclCommUserRank(child, &r);
    expect(n == 3 && r == me, "the child's size and rank",
           std::to_string(n) + " " + std::to_string(r));
    expect(sums_right(child, {0, 1, 2}, me), "allreduce on the child");
    sclComm_t again = nullptr;
    expect_error(sclCommShrink(comm, &three, 1, &again, nullptr, 0), sclInvalidUsage, comm,
                 "shrunk already", "a second shrink of the parent");
    const double t0 = now_s();
    expect(sclCommDestroy(comm) == sclSuccess, "destroying the parent");
    const double took = now_s() - t0;
    std::printf("rank %d: destroying the shrunk parent took %.2f ms\n", me, took * 1e3);
    expect(took < 1.0, "destroy does not wait for the excluded rank", std::to_string(took));
    comm = child;
  }
  if (me == 3) return g_failures ? 1 : 0;

  // Rank 0 revokes: every rank's next call fails naming it; a shrink keeps all three.
  if (me == 0) expect(sclCommRevoke(comm, SCL_REVOKE_DEFAULT) == sclSuccess, "revoke");
  float v[4] = {};
  expect_error(sclAllReduce(v, v, 4, sclFloat32, sclSum, comm, nullptr), sclRemoteError, comm,
               "rank 0", "a call after a revocation");
  expect(sclCommShrink(comm, nullptr, 0, &child, nullptr, SCL_SHRINK_ABORT) == sclSuccess,
         "shrink after a revocation", sclGetLastError(comm));
  expect(sums_right(child, {0, 1, 2}, me), "allreduce after shrinking a revoked communicator");
  sclCommDestroy(comm);
  comm = child;

  // Rank 0 excludes rank 2, which calls the shrink anyway, late: after the others have shrunk
  // and destroyed the communicator. It is told so (it must not find them gone and go on alone),
  // and the others go on.
  int two = 2;
  if (me == 2) usleep(300 * 1000);
  const sclResult_t r = sclCommShrink(comm, me == 0 ? &two : nullptr, me == 0 ? 1 : 0, &child,
                                      nullptr, SCL_SHRINK_DEFAULT);
  if (me == 2) {
    expect_error(r, sclInvalidUsage, comm, "holds this rank", "a survivor another one excluded");
    sclCommDestroy(comm);
  } else {
    expect(r == sclSuccess, "shrink where one survivor excludes another", sclGetLastError(comm));
    sclCommDestroy(comm);
    expect(sums_right(child, {0, 1}, me), "allreduce without the excluded survivor");
    sclCommDestroy(child);
  }
  return g_failures ? 1 : 0;
}

}  // namespace fault
