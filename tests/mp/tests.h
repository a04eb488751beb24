// The cases of mp_tests; each runs on the world communicator (world()) and returns the exit
// status of this rank (see finish() in harness.h). argv holds the arguments after the case name.
#pragma once

namespace mp {

int run_collectives(int argc, char** argv);
int run_large(int argc, char** argv);
int run_determinism(int argc, char** argv);
void determinism_before_init();  // picks this rank's reduction ISA
int run_comms(int argc, char** argv);
int run_streams(int argc, char** argv);
int run_loop(int argc, char** argv);
int run_p2p(int argc, char** argv);
int run_mixed(int argc, char** argv);
int run_order(int argc, char** argv);
int run_step_wrap(int argc, char** argv);
int run_moe(int argc, char** argv);
int run_hosts(int argc, char** argv);  // under stratarun --netns
int run_nccl_api(int argc, char** argv);

}  // namespace mp
