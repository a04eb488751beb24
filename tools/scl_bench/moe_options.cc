#include "moe_options.h"

#include <charconv>
#include <optional>
#include <sstream>

#include "measure.h"

namespace stratacl::bench {
namespace {

const char* const kMethods[] = {"stratacl", "stratacl-staged", "alltoallv-heap",
                                "alltoallv-staged"};

std::optional<long long> integer(const std::string& text) {
  long long v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) parts.push_back(part);
  return parts;
}

// Sets an int option in [lo, hi].
std::string set_int(const std::string& name, const std::string& value, long long lo, long long hi,
                    int* out) {
  const std::optional<long long> v = integer(value);
  if (!v || *v < lo || *v > hi) {
    return "option --" + name + ": '" + value + "' is not an integer in [" + std::to_string(lo) +
           ", " + std::to_string(hi) + "]";
  }
  *out = int(*v);
  return "";
}

std::string set_type(const std::string& name, const std::string& value, sclDataType_t* out) {
  if (!moe_workload::parse_type(value, out))
    return "option --" + name + ": '" + value + "' is not bf16, fp16, fp32 or fp8";
  return "";
}

}  // namespace

std::string parse_moe_options(int argc, char** argv, MoeOptions* o, bool* help) {
  *help = false;
  for (int i = 1; i < argc; ++i) {
    std::string name = argv[i];
    if (name == "-h" || name == "--help") {
      *help = true;
      return "";
    }
    if (name.rfind("--", 0) != 0) return "unexpected argument '" + name + "'";
    name = name.substr(2);
    if (i + 1 >= argc) return "option --" + name + " needs a value";
    const std::string value = argv[++i];
    std::string error;
    if (name == "tokens") {
      error = set_int(name, value, 0, 1 << 20, &o->tokens);
    } else if (name == "hidden") {
      error = set_int(name, value, 1, 1 << 20, &o->hidden);
    } else if (name == "topk") {
      error = set_int(name, value, 1, 1 << 10, &o->topk);
    } else if (name == "experts") {
      error = set_int(name, value, 1, 1 << 16, &o->experts);
    } else if (name == "iters") {
      error = set_int(name, value, 1, 1 << 20, &o->iters);
    } else if (name == "warmup") {
      error = set_int(name, value, 0, 1 << 20, &o->warmup);
    } else if (name == "repeats") {
      error = set_int(name, value, 1, 1000, &o->repeats);
    } else if (name == "layout") {
      if (value == "token") {
        o->expert_major = {false};
      } else if (value == "expert") {
        o->expert_major = {true};
      } else if (value == "both") {
        o->expert_major = {false, true};
      } else {
        error = "option --layout: '" + value + "' is not token, expert or both";
      }
    } else if (name == "x") {
      error = set_type(name, value, &o->x);
    } else if (name == "recv") {
      error = set_type(name, value, &o->recv);
      o->recv_given = true;
    } else if (name == "out") {
      error = set_type(name, value, &o->out);
    } else if (name == "routing") {
      error = moe_workload::RoutingSpec::parse(value, &o->routing);
      if (error.empty()) o->routing_text = o->routing.name();
      if (!error.empty()) error = "option --routing: " + error;
    } else if (name == "methods") {
      o->methods = split(value);
      for (const std::string& m : o->methods) {
        bool known = false;
        for (const char* k : kMethods) known = known || m == k;
        if (!known) error = "option --methods: unknown method '" + m + "'";
      }
    } else if (name == "check") {
      int c = 1;
      error = set_int(name, value, 0, 1, &c);
      o->check = c == 1;
    } else if (name == "seed") {
      int s = 1;
      error = set_int(name, value, 0, 1 << 30, &s);
      o->seed = uint64_t(s);
    } else if (name == "csv") {
      o->csv_path = value;
    } else {
      error = "unknown option --" + name;
    }
    if (!error.empty()) return error;
  }
  if (!o->recv_given) o->recv = o->x;
  return "";
}

std::string moe_usage_text() {
  return "usage: stratarun -n N scl-bench moe [options]\n"
         "MoE dispatch and combine (DeepEP semantics) against pack + alltoallv + unpack, in one\n"
         "run; every method's received rows and combined rows are checked.\n"
         "  --tokens T       tokens per rank, also maxTokensPerRank (default 4096)\n"
         "  --hidden H       elements per row (default 7168)\n"
         "  --topk K         experts per token (default 8)\n"
         "  --experts E      experts over all ranks, E/R consecutive per rank (default 256)\n"
         "  --layout L       token (DeepEP normal), expert (low latency) or both (default token)\n"
         "  --x TYPE         rows sent: bf16, fp16, fp32, fp8 (default bf16)\n"
         "  --recv TYPE      rows received: the x type, or fp8 from bf16 (default: x)\n"
         "  --out TYPE       expert outputs and combine's result: bf16, fp16, fp32 (default bf16)\n"
         "  --routing R      uniform, zipf:S (expert e drawn with weight 1/(e+1)^S), masked,\n"
         "                   onerank:R (default uniform)\n"
         "  --methods LIST   comma-separated: stratacl (heap buffers, zero-copy),\n"
         "                   stratacl-staged (malloc buffers), alltoallv-heap, alltoallv-staged\n"
         "                   (the baseline over sclAlltoAllv; default all four)\n"
         "  --iters N --warmup N --repeats N   timed calls, untimed pairs, passes (10, 2, 3)\n"
         "  --check 0|1      check every row after the first pass (default 1)\n"
         "  --seed S         the workload's seed (default 1)\n"
         "  --csv FILE       one row per method, call and pass (written by rank 0)\n"
         "Bandwidth per DeepEP: (token, expert) pairs x row bytes per rank (dispatch: rows as\n"
         "received, fp8 H + 4H/128; combine: outType rows) over the slowest rank's time, pairs\n"
         "whose expert is on the token's own rank included.\n";
}

}  // namespace stratacl::bench
