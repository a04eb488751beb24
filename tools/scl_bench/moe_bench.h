// scl-bench moe: MoE dispatch and combine (sclMoeDispatch/sclMoeCombine) against the
// buffer-centric baseline (pack + alltoallv + unpack, tools/moe_workload) over sclAlltoAllv, on
// heap and on malloc buffers, in one run: every method's rows checked, DeepEP's bandwidth, and
// the ratio to the best baseline.
#ifndef STRATACL_TOOLS_SCL_BENCH_MOE_BENCH_H_
#define STRATACL_TOOLS_SCL_BENCH_MOE_BENCH_H_

namespace stratacl::bench {

// argv[0] is "moe"; returns the exit status (0 ok, 1 wrong results, 2 usage, 3 failure).
int run_moe_main(int argc, char** argv);

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_MOE_BENCH_H_
