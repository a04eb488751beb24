// Command-line options of scl-bench moe.
#ifndef STRATACL_TOOLS_SCL_BENCH_MOE_OPTIONS_H_
#define STRATACL_TOOLS_SCL_BENCH_MOE_OPTIONS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "stratacl/stratacl.h"
#include "workload.h"

namespace stratacl::bench {

struct MoeOptions {
  int tokens = 4096;  // T per rank (every rank the same), also maxTokensPerRank
  int hidden = 7168;
  int topk = 8;
  int experts = 256;
  std::vector<bool> expert_major = {false};  // --layout token|expert|both
  sclDataType_t x = sclBfloat16, recv = sclBfloat16, out = sclBfloat16;
  bool recv_given = false;
  moe_workload::RoutingSpec routing;
  std::string routing_text = "uniform";
  std::vector<std::string> methods = {"stratacl", "stratacl-staged", "alltoallv-heap",
                                      "alltoallv-staged"};
  int iters = 10, warmup = 2, repeats = 3;
  bool check = true;
  uint64_t seed = 1;
  std::string csv_path;
};

// Empty on success, else what is wrong (naming the option).
std::string parse_moe_options(int argc, char** argv, MoeOptions* out, bool* help);
std::string moe_usage_text();

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_MOE_OPTIONS_H_
