// scl-bench overlap: how much of an allreduce on a stream hides behind the caller's compute (a
// blocked matrix multiply), with the workers and engines the environment configures. Prints and
// writes (--csv) t_comm, t_comp, t_both and the overlap efficiency
//   (t_comm + t_comp - t_both) / min(t_comm, t_comp)
// (1: the shorter one hides entirely; 0: they run one after the other), medians over repeats,
// and checks every element of every allreduce.
#ifndef STRATACL_TOOLS_SCL_BENCH_OVERLAP_BENCH_H_
#define STRATACL_TOOLS_SCL_BENCH_OVERLAP_BENCH_H_

namespace stratacl::bench {

// argv[0] is "overlap"; returns the exit status (0 ok, 1 wrong results, 2 usage, 3 failure).
int run_overlap_main(int argc, char** argv);

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_OVERLAP_BENCH_H_
