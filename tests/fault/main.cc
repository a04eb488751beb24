// fault_tests <case>: run under stratarun. Each case exits 0 when the library behaved.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fault_common.h"

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // lines reach the launcher even if we are killed
  const std::string which = argc > 1 ? argv[1] : "";
  if (which == "bad_arguments") return fault::run_bad_arguments();
  if (which == "mismatch") return fault::run_mismatch();
  if (which == "one_rank_refused") {
    return fault::run_one_rank_refused(argc > 2 && std::string(argv[2]) == "hosts");
  }
  if (which == "group_failures") return fault::run_group_failures();
  if (which == "size_mismatch") {
    return fault::run_size_mismatch(argc > 2 && std::string(argv[2]) == "hosts");
  }
  if (which == "moe_bad_arguments") return fault::run_moe_bad_arguments();
  if (which == "moe_mismatch") return fault::run_moe_mismatch();
  if (which == "kill") {
    return fault::run_kill_survivor(argc > 2 ? std::atoi(argv[2]) : 1,
                                    argc > 3 ? argv[3] : "allreduce");
  }
  if (which == "stop") return fault::run_stopped_rank();
  if (which == "destroy_during_call") return fault::run_destroy_during_call();
  if (which == "cycles") return fault::run_cycles(argc > 2 ? std::atoi(argv[2]) : 1000);
  if (which == "never_arrives") return fault::run_peer_never_arrives();
  if (which == "abort") return fault::run_abort();
  if (which == "cma_refused") return fault::run_cma_refused();
  if (which == "settings_disagree") {
    return fault::run_settings_disagree(argc > 2 ? argv[2] : "STRATACL_EAGER_MAX_BYTES is");
  }
  if (which == "fork_child") return fault::run_fork_child();
  if (which == "read_only_heaps") return fault::run_read_only_heaps();
  if (which == "init_interference") return fault::run_init_interference();
  if (which == "failed_init") return fault::run_failed_init();
  if (which == "split_failure") return fault::run_split_failure();
  if (which == "call_deadline") return fault::run_call_deadline();
  if (which == "stop_culprit") return fault::run_stop_culprit();
  if (which == "host_loss") {
    const double lost_s = argc > 2 ? std::atof(argv[2]) : 1.0;
    const std::string how = argc > 3 ? argv[3] : "";
    return how == "stall" ? fault::run_host_stall(lost_s)
                          : fault::run_host_loss(lost_s, how == "abort");
  }
  if (which == "shrink_cases") return fault::run_shrink_cases();
  if (which == "shrink" && argc > 4)
    return fault::run_shrink(std::atoi(argv[2]), std::atoi(argv[3]), argv[4]);
  if (which == "p2p_slot_status")
    return fault::run_p2p_slot_status(argc > 2 ? std::atoi(argv[2]) : 200);
  if (which == "send_abort") return fault::run_send_abort(argc > 2 ? std::atoi(argv[2]) : 20);
  if (which == "abort_blocked") return fault::run_abort_blocked(argc > 2 ? std::atoi(argv[2]) : 30);
  std::fprintf(
      stderr,
      "usage: fault_tests "
      "bad_arguments|mismatch|one_rank_refused [hosts]|group_failures|size_mismatch "
      "[hosts]|moe_bad_arguments|moe_mismatch|kill "
      "VICTIM "
      "[allreduce|alltoall|stream|moe|init]|stop|never_arrives|abort|destroy_during_call|cycles N|"
      "cma_refused|settings_disagree [TEXT]|fork_child|read_only_heaps|abort_blocked "
      "N|init_interference|\n"
      "failed_init|split_failure|call_deadline|stop_culprit|p2p_slot_status N|send_abort N|\n"
      "host_loss LOST_S [abort|stall]|shrink VICTIM SECOND DIR|shrink_cases\n");
  return 2;
}
