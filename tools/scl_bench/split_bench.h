// scl-bench split: what a communicator costs to make, as a framework pays it for every process
// group (torch.distributed.new_group, Megatron's tensor- and data-parallel groups): the time of
// sclCommSplit into one child of every rank (the slowest rank's, median over repeats) and the
// resident memory the child adds (the most any rank grows), each child used by one allreduce,
// checked, then destroyed. Across hosts a child opens its own network endpoints.
#ifndef STRATACL_TOOLS_SCL_BENCH_SPLIT_BENCH_H_
#define STRATACL_TOOLS_SCL_BENCH_SPLIT_BENCH_H_

namespace stratacl::bench {

// argv[0] is "split"; returns the exit status (0 ok, 1 wrong results, 2 usage, 3 failure).
int run_split_main(int argc, char** argv);

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_SPLIT_BENCH_H_
