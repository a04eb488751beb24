#include "core/config.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/byte_size.h"

namespace stratacl {
namespace {

constexpr int64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;

int64_t physical_ram() {
  // The heap is sparse: capacity costs address space, not memory. Default to physical RAM.
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  int64_t ram = (pages > 0 && page > 0) ? int64_t(pages) * page : 16 * kGiB;
  return ram & ~(2 * kMiB - 1);
}

constexpr const char* kIsaChoices[] = {"auto", "avx512", "avx2", "scalar"};

using K = VarKind;
const VarSpec kVars[] = {
    {.id = Var::kTimeoutMs,
     .name = "STRATACL_TIMEOUT_MS",
     .kind = K::kNumber,
     .min = 1,
     .max = 24LL * 3600 * 1000,
     .number_default = 300 * 1000,
     .help = "deadline of every call, and of bootstrap and destroy, ms"},
    {.id = Var::kThreads,
     .name = "STRATACL_THREADS",
     .kind = K::kNumber,
     .min = 0,
     .max = 64,
     .number_default = 0,
     .help = "worker threads per rank, the caller included (0: the cost model's choice)"},
    {.id = Var::kCopyEngines,
     .name = "STRATACL_COPY_ENGINES",
     .kind = K::kNumber,
     .min = 0,
     .max = 16,
     .number_default = 0,
     .help = "copy-engine threads per rank (pure moves run on them while workers reduce)"},
    {.id = Var::kWorkerMinBytes,
     .name = "STRATACL_WORKER_MIN_BYTES",
     .kind = K::kNumber,
     .min = -1,
     .max = 1 * kGiB,
     .number_default = -1,
     .help =
         "least bytes per worker in one job (-1: the cost model; 0: every job uses every worker)"},
    {.id = Var::kHostGbps,
     .name = "STRATACL_HOST_GBPS",
     .kind = K::kNumber,
     .min = 0,
     .max = 100000,
     .number_default = 0,
     .help =
         "memcpy GB/s of all cores together, for the cost model (0: scaled from 2 cores; measure "
         "with scl-info --calibrate)"},
    {.id = Var::kStagingBytes,
     .name = "STRATACL_STAGING_BYTES",
     .kind = K::kNumber,
     .min = 64 * kKiB,
     .max = 16 * kGiB,
     .number_default = 32 * kMiB,
     .help = "staging area per communicator for foreign (non-heap) buffers"},
    {.id = Var::kHeapBytes,
     .name = "STRATACL_HEAP_BYTES",
     .kind = K::kNumber,
     .min = 64 * kMiB,
     .max = 64 * 1024 * kGiB,
     .computed_default = physical_ram,
     .help = "capacity of the registration-on-allocation heap (sparse; default: RAM)"},
    {.id = Var::kSpinNs,
     .name = "STRATACL_SPIN_NS",
     .kind = K::kNumber,
     .min = -1,
     .max = 1000LL * 1000 * 1000,
     .number_default = -1,
     .help = "spin before sleeping on a futex, ns (-1: adapt to ranks per core)"},
    {.id = Var::kOneShotMaxBytes,
     .name = "STRATACL_ONESHOT_MAX_BYTES",
     .kind = K::kNumber,
     .min = -1,
     .max = 16 * kGiB,
     .number_default = -1,
     .help = "largest allreduce run one-shot (-1: selection table)"},
    // 512: the measured crossover with the zero-copy path (docs/TUNING-LOG.md).
    {.id = Var::kEagerMaxBytes,
     .name = "STRATACL_EAGER_MAX_BYTES",
     .kind = K::kNumber,
     .min = 0,
     .max = 4096,
     .number_default = 512,
     .help = "largest per-rank payload sent inside the arrival flag (one round, no zero-copy)"},
    {.id = Var::kNtMinBytes,
     .name = "STRATACL_NT_MIN_BYTES",
     .kind = K::kNumber,
     .min = 0,
     .max = 1024 * kGiB,
     .number_default = 32 * kMiB,
     .help = "smallest output per rank whose copies use non-temporal stores (0: never)"},
    {.id = Var::kIsa,
     .name = "STRATACL_ISA",
     .kind = K::kChoice,
     .choices = kIsaChoices,
     .help = "reduction kernels: auto, avx512, avx2 or scalar (the best supported at or below)"},
    {.id = Var::kBootstrapAddr,
     .name = "STRATACL_BOOTSTRAP_ADDR",
     .kind = K::kText,
     .help = "address sclGetUniqueId's rendezvous root listens on (default: loopback)"},
    {.id = Var::kHostId,
     .name = "STRATACL_HOST_ID",
     .kind = K::kText,
     .help = "overrides this host's identity: ranks with equal ids share memory"},
    {.id = Var::kNetProvider,
     .name = "STRATACL_NET_PROVIDER",
     .kind = K::kText,
     .help = "libfabric provider between hosts, e.g. tcp;ofi_rxm (default: the first network one)"},
    {.id = Var::kNetLostMs,
     .name = "STRATACL_NET_LOST_MS",
     .kind = K::kNumber,
     .min = 100,
     .max = 24LL * 3600 * 1000,
     .number_default = 10 * 1000,
     .help = "a rank on another host not heard from for this long is lost (heartbeats every "
             "eighth), ms"},
    {.id = Var::kNetOneSidedMinBytes,
     .name = "STRATACL_NET_ONE_SIDED_MIN_BYTES",
     .kind = K::kNumber,
     .min = -1,
     .max = 1024 * kGiB,
     .number_default = kNetEagerMaxBytes,
     .help = "smallest transfer between hosts written one-sided into the peer's registered buffer "
             "(-1: none)"},
    {.id = Var::kNetDoublingMinHosts,
     .name = "STRATACL_NET_DOUBLING_MIN_HOSTS",
     .kind = K::kNumber,
     .min = -1,
     .max = 1 << 16,
     .number_default = 4,
     .help = "hosts from which small allreduces, allgathers, reduce-scatters and alltoalls "
             "cross hosts in about log2(hosts) rounds of one message each way (recursive "
             "doubling at powers of two, else Bruck's) instead of one direct round (-1: never)"},
    {.id = Var::kNetTreeRadix,
     .name = "STRATACL_NET_TREE_RADIX",
     .kind = K::kNumber,
     .min = 2,
     .max = 1 << 16,
     .number_default = 2,
     .help = "radix of the trees of hosts that broadcasts of up to 64 bytes and barriers cross "
             "from 4 hosts on, in log_radix(hosts) rounds (larger broadcasts: 2; fewer hosts, "
             "or a radix of at least the host count: one round)"},
    {.id = Var::kNetPaceCalls,
     .name = "STRATACL_NET_PACE_CALLS",
     .kind = K::kNumber,
     .min = 1,
     .max = 1 << 16,
     .number_default = 61,
     .help = "in every this-many-th call across hosts, a broadcast's or reduce's receivers "
             "answer their senders, which wait for it: a rank calling them back to back stays "
             "within that many calls of the ranks it sends to (1: every call)"},
    {.id = Var::kDebug,
     .name = "STRATACL_DEBUG",
     .kind = K::kNumber,
     .min = 0,
     .max = 2,
     .number_default = 0,
     .help = "log level: 0 errors, 1 info, 2 trace"},
    {.id = Var::kTorchCacheBytes,
     .name = "STRATACL_TORCH_CACHE_BYTES",
     .kind = K::kNumber,
     .min = 0,
     .max = 1024 * kGiB,
     .number_default = 1 * kGiB,
     .help = "freed heap blocks the torch tensor allocator keeps for reuse (python/; 0: none)"},
};
static_assert(std::size(kVars) == size_t(Var::kCount));

Setting default_setting(const VarSpec& s) {
  Setting out;
  switch (s.kind) {
    case K::kNumber:
      out.value = s.computed_default ? s.computed_default() : s.number_default;
      out.text = std::to_string(out.value);
      break;
    case K::kChoice:
      out.text = s.choices[0];
      break;
    case K::kText:
      break;
  }
  return out;
}

Result<Setting> read_env(const VarSpec& s) {
  const char* text = std::getenv(s.name);
  if (!text || !*text) return default_setting(s);
  Result<Setting> out = parse_setting(s, text);
  if (out.ok()) out->source = Source::kEnvironment;
  return out;
}

}  // namespace

const char* source_name(Source s) {
  switch (s) {
    case Source::kDefault:
      return "default";
    case Source::kEnvironment:
      return "environment";
    case Source::kConfig:
      return "sclConfig_t";
  }
  return "?";
}

std::span<const VarSpec> all_vars() { return kVars; }
const VarSpec& spec(Var v) { return kVars[int(v)]; }

Result<Setting> parse_setting(const VarSpec& s, const char* text) {
  Setting out;
  out.text = text;
  switch (s.kind) {
    case K::kNumber: {
      long long n = 0;
      const int rc = scl_parse_byte_size(text, &n);
      if (rc == -1) {
        return Errorf(sclInvalidArgument,
                      "%s=\"%s\" is not a number (digits, optionally with K, M or G)", s.name,
                      text);
      }
      if (rc != 0 || n < s.min || n > s.max) {
        return Errorf(sclInvalidArgument, "%s=\"%s\" is out of range [%lld, %lld]", s.name, text,
                      (long long)s.min, (long long)s.max);
      }
      out.value = n;
      return out;
    }
    case K::kChoice: {
      std::string all;
      for (size_t i = 0; i < s.choices.size(); ++i) {
        if (std::strcmp(text, s.choices[i]) == 0) {
          out.value = int64_t(i);
          return out;
        }
        all += (i ? ", " : "") + std::string(s.choices[i]);
      }
      return Errorf(sclInvalidArgument, "%s=\"%s\" is not one of: %s", s.name, text, all.c_str());
    }
    case K::kText:
      return out;
  }
  return out;
}

Result<Setting> process_setting(Var v) {
  // Parsed once per process; the environment does not change under a running job.
  static std::once_flag once;
  static Result<Setting>* cache[size_t(Var::kCount)];
  std::call_once(once, [] {
    for (size_t i = 0; i < size_t(Var::kCount); ++i)
      cache[i] = new Result<Setting>(read_env(kVars[i]));
  });
  return *cache[int(v)];
}

int64_t process_value(Var v) {
  Result<Setting> s = process_setting(v);
  return s.ok() ? s->value : default_setting(spec(v)).value;
}

std::string process_text(Var v) {
  Result<Setting> s = process_setting(v);
  return s.ok() ? s->text : default_setting(spec(v)).text;
}

Status check_environment() {
  for (const VarSpec& s : kVars) SCL_TRY(process_setting(s.id).status());
  return Status::Ok();
}

namespace {

// SCL_CONFIG_INITIALIZER sets every field: its last one is unset, not zero.
constexpr sclConfig_t kInitialized = SCL_CONFIG_INITIALIZER;
static_assert(kInitialized.graphStreamOrdering == SCL_CONFIG_UNDEF_INT);

// NCCL's fields that mean nothing on CPU ranks (sclConfig_t version 2): unset, or a value NCCL
// would accept.
Status check_ignored_fields(const sclConfig_t& user) {
  if (user.version < 2 || user.size < sizeof(sclConfig_t)) return Status::Ok();
  const struct {
    const char* name;
    int value;
  } fields[] = {{"splitShare", user.splitShare},
                {"cgaClusterSize", user.cgaClusterSize},
                {"minCTAs", user.minCTAs},
                {"maxCTAs", user.maxCTAs},
                {"trafficClass", user.trafficClass},
                {"collnetEnable", user.collnetEnable},
                {"CTAPolicy", user.CTAPolicy},
                {"shrinkShare", user.shrinkShare},
                {"nvlsCTAs", user.nvlsCTAs},
                {"nChannelsPerNetPeer", user.nChannelsPerNetPeer},
                {"nvlinkCentricSched", user.nvlinkCentricSched},
                {"graphUsageMode", user.graphUsageMode},
                {"numRmaCtx", user.numRmaCtx},
                {"maxP2pPeers", user.maxP2pPeers},
                {"graphStreamOrdering", user.graphStreamOrdering}};
  for (const auto& f : fields) {
    if (f.value != SCL_CONFIG_UNDEF_INT && f.value < 0)
      return Errorf(sclInvalidArgument, "config: %s = %d must be >= 0", f.name, f.value);
  }
  return Status::Ok();
}

}  // namespace

Result<CommConfig> resolve_comm_config(const sclConfig_t* user) {
  if (user) {
    if (user->magic != SCL_CONFIG_MAGIC || user->size < offsetof(sclConfig_t, netName) ||
        user->version == 0 || user->version > SCL_CONFIG_VERSION) {
      return Errorf(sclInvalidArgument,
                    "config: not initialised with SCL_CONFIG_INITIALIZER (size %zu, magic 0x%x, "
                    "version %u)",
                    user->size, user->magic, user->version);
    }
    if (user->blocking != SCL_CONFIG_UNDEF_INT && user->blocking != 0 && user->blocking != 1)
      return Errorf(sclInvalidArgument, "config: blocking = %d (use 0 or 1)", user->blocking);
    SCL_TRY(check_ignored_fields(*user));
  }
  CommConfig c;
  // `name`: the field's, which the error names (the caller set it, not the variable).
  auto pick = [&](Var v, const char* name, long long field, long long undef,
                  Setting* out) -> Status {
    SCL_ASSIGN_OR_RETURN(*out, process_setting(v));
    if (!user || field == undef) return Status::Ok();
    const VarSpec& s = spec(v);
    if (field < s.min || field > s.max) {
      return Errorf(sclInvalidArgument, "config: %s = %lld is out of range [%lld, %lld] (as %s)",
                    name, field, (long long)s.min, (long long)s.max, s.name);
    }
    out->value = field;
    out->text = std::to_string(field);
    out->source = Source::kConfig;
    return Status::Ok();
  };
  SCL_TRY(pick(Var::kTimeoutMs, "timeoutMs", user ? user->timeoutMs : 0, SCL_CONFIG_UNDEF_INT,
               &c.timeout_ms));
  SCL_TRY(
      pick(Var::kThreads, "threads", user ? user->threads : 0, SCL_CONFIG_UNDEF_INT, &c.threads));
  SCL_TRY(pick(Var::kCopyEngines, "copyEngines", user ? user->copyEngines : 0, SCL_CONFIG_UNDEF_INT,
               &c.copy_engines));
  SCL_TRY(pick(Var::kStagingBytes, "stagingBytes", user ? user->stagingBytes : 0, -1,
               &c.staging_bytes));
  c.name = (user && user->commName) ? user->commName : "";
  c.blocking = !user || user->blocking != 0;
  return c;
}

}  // namespace stratacl
