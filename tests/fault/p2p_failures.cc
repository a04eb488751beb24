// Point-to-point under mismatches and aborts.
//  - p2p_slot_status: two sends to one peer, acknowledged together; the first is mismatched.
//    Each acknowledgement slot keeps its own result, so the sender always learns of the mismatch
//    (with one result per channel, the second send's success overwrote it).
//  - send_abort: rank 0 sends 128 MiB of malloc'd memory (staged) and aborts at moments spread
//    over the send, some while rank 1 is copying it. Rank 1 gets exactly the data sent, or an
//    error: the staged copy stays until no receiver can read it.
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fault_common.h"

namespace fault {

int run_p2p_slot_status(int iterations) {
  sclComm_t comm = init_or_die();
  std::vector<int32_t> a(1000, 7), b(1000, 8);
  int caught = 0;
  for (int it = 0; it < iterations; ++it) {
    sclResult_t r;
    sclGroupStart();
    if (g_rank == 0) {
      sclSend(a.data(), 10, sclInt32, 1, comm, nullptr);
      sclSend(b.data(), 20, sclInt32, 1, comm, nullptr);
    } else {
      sclRecv(a.data(), 11, sclInt32, 0, comm, nullptr);  // mismatched: 10 are sent
      sclRecv(b.data(), 20, sclInt32, 0, comm, nullptr);
    }
    r = sclGroupEnd();
    caught += r == sclInvalidUsage;
    expect(r == sclInvalidUsage, "both sides see the mismatch of the first send",
           std::string(sclGetErrorString(r)) + ": " + sclGetLastError(comm));
  }
  std::printf("rank %d: p2p_slot_status: mismatch seen in %d of %d iterations\n", g_rank, caught,
              iterations);
  sclCommDestroy(comm);
  return g_failures ? 1 : 0;
}

int run_send_abort(int iterations) {
  const size_t count = 32u << 20;  // 128 MiB of int32
  int delivered = 0, failed = 0;
  for (int it = 0; it < iterations; ++it) {
    sclComm_t comm = init_or_die();
    // Fresh pages, untouched: the receiver's copy faults them in, which makes it last (~100 ms),
    // longer than the sender takes to notice an abort.
    std::unique_ptr<int32_t[]> data(new int32_t[count]);
    if (g_rank == 0) {
      for (size_t i = 0; i < count; ++i) data[i] = int32_t(i * 2654435761u) ^ it;
      std::thread sender([&] { sclSend(data.get(), count, sclInt32, 1, comm, nullptr); });
      // Anywhere from the staging copy (tens of ms: its pages are new) to the receiver's copy:
      // the iterations spread evenly over 1-241 ms, however many there are.
      usleep(useconds_t(1000 + 240000 * it / std::max(1, iterations - 1)));
      sclCommAbort(comm);
      sender.join();
      continue;
    }
    const sclResult_t r = sclRecv(data.get(), count, sclInt32, 0, comm, nullptr);
    if (r == sclSuccess) {
      size_t wrong = 0;
      for (size_t i = 0; i < count; ++i) wrong += data[i] != (int32_t(i * 2654435761u) ^ it);
      expect(wrong == 0, "a receive that succeeds holds the data sent",
             std::to_string(wrong) + " of " + std::to_string(count) + " elements wrong");
      ++delivered;
    } else {
      ++failed;
    }
    sclCommDestroy(comm);
  }
  if (g_rank == 1) {
    std::printf("rank 1: send_abort: %d receives delivered the data, %d failed cleanly: %s\n",
                delivered, failed, g_failures ? "FAILED" : "OK");
  }
  return g_failures ? 1 : 0;
}

}  // namespace fault
