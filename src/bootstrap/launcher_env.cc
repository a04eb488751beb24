#include "bootstrap/launcher_env.h"

#include <arpa/inet.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "bootstrap/socket.h"
#include "core/config.h"
#include "core/hash.h"
#include "core/log.h"

namespace stratacl::bootstrap {
namespace {

Result<int> parse_int(const char* name, const char* text) {
  char* end;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (end == text || *end || errno || v < 0 || v > (1 << 24)) {
    return Errorf(sclInvalidArgument, "%s=\"%s\" is not a valid count", name, text);
  }
  return int(v);
}

struct Flavor {
  const char* launcher;
  const char* rank_var;
  const char* size_var;
  const char* job_var;  // names the job, for a derived secret when none is given
};

// In order of precedence: our own launcher first.
const Flavor kFlavors[] = {
    {"stratarun", "STRATACL_RANK", "STRATACL_WORLD_SIZE", "STRATACL_JOB_SECRET"},
    {"torchrun", "RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_MCA_ess_base_jobid"},
    {"mpich", "PMI_RANK", "PMI_SIZE", "PMI_KVSNAME"},
    {"slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_JOB_ID"},
};

// Without STRATACL_JOB_SECRET the secret is derived from what the job's ranks share. That
// keeps strangers' stray connections out, but it is not a secret against local users who can
// read our environment; stratarun always passes a random one. Documented in the README.
Secret derive_secret(const std::string& material) {
  Secret s{};
  const uint64_t h1 = fnv1a(kFnvBasisShared, material);
  // The other half: FNV-1a's step with a shifted copy of the hash added, from another basis.
  uint64_t h2 = kGoldenGamma;
  for (unsigned char c : material) h2 = fnv1a_byte(h2, c) + (h2 >> 29);
  std::memcpy(s.data(), &h1, 8);
  std::memcpy(s.data() + 8, &h2, 8);
  return s;
}

}  // namespace

Result<LaunchEnv> read_launch_env(const EnvLookup& lookup) {
  auto env = [&](const char* name) -> const char* {
    const char* v = lookup ? lookup(name) : std::getenv(name);
    return (v && *v) ? v : nullptr;
  };
  LaunchEnv out;
  const Flavor* f = nullptr;
  for (const Flavor& cand : kFlavors) {
    if (env(cand.rank_var) && env(cand.size_var)) {
      f = &cand;
      break;
    }
  }
  if (!f) {
    return Errorf(sclInvalidUsage,
                  "sclCommInitFromEnv: no launcher environment found (looked for STRATACL_RANK, "
                  "RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID with their sizes)");
  }
  out.launcher = f->launcher;
  SCL_ASSIGN_OR_RETURN(out.rank, parse_int(f->rank_var, env(f->rank_var)));
  SCL_ASSIGN_OR_RETURN(out.nranks, parse_int(f->size_var, env(f->size_var)));
  if (out.nranks < 1 || out.rank >= out.nranks) {
    return Errorf(sclInvalidArgument, "%s=%d is out of range for %s=%d", f->rank_var, out.rank,
                  f->size_var, out.nranks);
  }

  // Rendezvous address: ours, else torchrun's MASTER_ADDR with MASTER_PORT+1 (torchrun's own
  // store already listens on MASTER_PORT).
  std::string addr;
  if (const char* a = env("STRATACL_ROOT_ADDR")) {
    addr = a;
  } else if (env("MASTER_ADDR") && env("MASTER_PORT")) {
    SCL_ASSIGN_OR_RETURN(int port, parse_int("MASTER_PORT", env("MASTER_PORT")));
    addr = std::string(env("MASTER_ADDR")) + ":" + std::to_string(port + 1);
  } else {
    return Errorf(sclInvalidUsage,
                  "sclCommInitFromEnv: %s gives no rendezvous address; set STRATACL_ROOT_ADDR "
                  "(host:port reachable by all ranks) or MASTER_ADDR and MASTER_PORT",
                  out.launcher.c_str());
  }
  SCL_ASSIGN_OR_RETURN(out.id.root,
                       parse_host_port(addr, Deadline::after_ms(process_value(Var::kTimeoutMs))));

  if (const char* hex = env("STRATACL_JOB_SECRET")) {
    Result<Secret> s = parse_secret_hex(hex);
    if (!s.ok())
      return Errorf(sclInvalidArgument, "STRATACL_JOB_SECRET: %s", s.status().message().c_str());
    out.id.secret = *s;
  } else {
    const char* job = env(f->job_var);
    out.id.secret = derive_secret(std::string(f->launcher) + "|" + (job ? job : "") + "|" + addr +
                                  "|" + std::to_string(out.nranks));
    log_info(
        "no STRATACL_JOB_SECRET: the job secret is derived from %s's job identity; it keeps "
        "stray connections out, but whoever knows the job can compute it (set a random one: "
        "README, Launchers)",
        out.launcher.c_str());
  }
  if (out.rank == 0) {
    out.serve_root = true;
    if (const char* fd = env("STRATACL_ROOT_FD")) {
      SCL_ASSIGN_OR_RETURN(out.root_fd, parse_int("STRATACL_ROOT_FD", fd));
    }
  }
  return out;
}

Result<LaunchEnv> next_env_launch() {
  Result<LaunchEnv> env = read_launch_env();
  if (!env.ok()) return env;
  static std::atomic<uint64_t> generation{0};
  const uint64_t k = generation.fetch_add(1);
  env->id.secret = secret_for_generation(env->id.secret, k);
  if (k > 0) env->root_fd = -1;
  return env;
}

}  // namespace stratacl::bootstrap
