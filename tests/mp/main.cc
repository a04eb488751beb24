// mp_tests: multi-rank correctness tests. Run every rank under a launcher:
//   stratarun -n N mp_tests <case> [args]
// Cases: collectives [--thin], large, determinism, comms [--churn-only], streams,
// loop [iterations], p2p, mixed, order, step_wrap, moe, hosts, nccl_api.
#include <cstdio>
#include <cstring>

#include "harness.h"
#include "tests.h"

namespace {

struct Case {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* help;
  void (*before_init)() = nullptr;  // runs before the library reads its environment
};

const Case kCases[] = {
    {"collectives", mp::run_collectives,
     "every collective x dtype x op x count x buffer placement [--thin]"},
    {"large", mp::run_large, "1Mi+3 and 16Mi element collectives [--small: 1Mi+3 only]"},
    {"determinism", mp::run_determinism, "bit-identical allreduce results across ranks and runs",
     mp::determinism_before_init},
    {"comms", mp::run_comms, "split communicators used alternately with the world [--churn-only]"},
    {"streams", mp::run_streams, "hundreds of calls queued on streams, then checked"},
    {"loop", mp::run_loop, "10000 small allreduces [iterations]"},
    {"p2p", mp::run_p2p, "grouped send/recv patterns"},
    {"mixed", mp::run_mixed, "allreduce with some ranks in place and others not"},
    {"order", mp::run_order, "issue order across streams; groups across communicators"},
    {"step_wrap", mp::run_step_wrap, "eager steps where step numbers wrap around"},
    {"hosts", mp::run_hosts, "collectives across hosts (stratarun --netns) [--small]"},
    {"moe", mp::run_moe, "MoE dispatch and combine against the alltoallv reference"},
    {"nccl_api", mp::run_nccl_api,
     "PreMulSum, sclBcast, windows, sclRecvAny, non-blocking mode, finalize, sclCommInitAll"},
};

void usage() {
  fprintf(stderr, "usage: stratarun -n N mp_tests <case> [args]\ncases:\n");
  for (const Case& c : kCases) fprintf(stderr, "  %-12s %s\n", c.name, c.help);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage();
    return 2;
  }
  const Case* chosen = nullptr;
  for (const Case& c : kCases) {
    if (std::strcmp(argv[1], c.name) == 0) chosen = &c;
  }
  if (!chosen) {
    fprintf(stderr, "mp_tests: unknown case '%s'\n", argv[1]);
    usage();
    return 2;
  }
  // Unbuffered progress output would interleave badly across ranks; line buffering is enough.
  setvbuf(stdout, nullptr, _IOLBF, 0);

  if (chosen->before_init) chosen->before_init();
  sclComm_t comm = nullptr;
  MP_OK(sclCommInitFromEnv(&comm));
  mp::set_world(mp::describe(comm));
  const int status = chosen->run(argc - 2, argv + 2);
  MP_OK(sclCommDestroy(comm));
  return status;
}
