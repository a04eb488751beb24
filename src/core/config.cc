#include "core/config.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace stratacl {
namespace {

constexpr int64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;

int64_t default_heap_bytes() {
  // The heap is sparse: capacity costs address space, not memory. Default to physical RAM.
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  int64_t ram = (pages > 0 && page > 0) ? int64_t(pages) * page : 16 * kGiB;
  return ram & ~(2 * kMiB - 1);
}

const VarSpec kVars[] = {
    {Var::kTimeoutMs, "STRATACL_TIMEOUT_MS", true, 1, 24LL * 3600 * 1000,
     "deadline of every wait (bootstrap, collectives, destroy), ms"},
    {Var::kThreads, "STRATACL_THREADS", true, 1, 64, "worker threads per rank"},
    {Var::kCopyEngines, "STRATACL_COPY_ENGINES", true, 0, 16, "copy-engine threads per rank"},
    {Var::kStagingBytes, "STRATACL_STAGING_BYTES", true, 64 * kKiB, 16 * kGiB,
     "staging area per communicator for foreign (non-heap) buffers"},
    {Var::kHeapBytes, "STRATACL_HEAP_BYTES", true, 64 * kMiB, 64 * 1024 * kGiB,
     "capacity of the registration-on-allocation heap (sparse)"},
    {Var::kSpinNs, "STRATACL_SPIN_NS", true, -1, 1000LL * 1000 * 1000,
     "spin before sleeping on a futex, ns (-1: adapt to ranks per core)"},
    {Var::kOneShotMaxBytes, "STRATACL_ONESHOT_MAX_BYTES", true, -1, 16 * kGiB,
     "largest allreduce run one-shot (-1: selection table)"},
    {Var::kEagerMaxBytes, "STRATACL_EAGER_MAX_BYTES", true, 0, 4096,
     "largest per-rank payload sent inside the arrival flag (one round, no zero-copy)"},
    {Var::kNtMinBytes, "STRATACL_NT_MIN_BYTES", true, 0, 1024 * kGiB,
     "smallest output per rank whose copies use non-temporal stores (0: never)"},
    {Var::kIsa, "STRATACL_ISA", false, 0, 0, "reduction kernels: auto, avx512, avx2 or scalar"},
    {Var::kDebug, "STRATACL_DEBUG", true, 0, 2, "log level: 0 errors, 1 info, 2 trace"},
};
static_assert(std::size(kVars) == size_t(Var::kCount));

int64_t default_value(Var v) {
  switch (v) {
    case Var::kTimeoutMs:
      return 300 * 1000;
    case Var::kThreads:
      return 1;
    case Var::kCopyEngines:
      return 0;
    case Var::kStagingBytes:
      return 32 * kMiB;
    case Var::kHeapBytes:
      return default_heap_bytes();
    case Var::kSpinNs:
      return -1;
    case Var::kOneShotMaxBytes:
      return -1;
    case Var::kEagerMaxBytes:
      return 512;  // measured crossover with the zero-copy path: docs/PERFORMANCE.md
    case Var::kNtMinBytes:
      return 32 * kMiB;
    case Var::kDebug:
      return 0;
    default:
      return 0;
  }
}

Result<Setting> read_env(Var v) {
  const VarSpec& s = spec(v);
  Setting out;
  const char* text = std::getenv(s.name);
  if (!text || !*text) {
    out.value = default_value(v);
    out.text = s.numeric ? std::to_string(out.value) : "auto";
    return out;
  }
  out.source = Source::kEnvironment;
  out.text = text;
  if (s.numeric) {
    Result<int64_t> n = parse_number(s, text);
    if (!n.ok()) return n.status();
    out.value = *n;
  }
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

Result<int64_t> parse_number(const VarSpec& s, const char* text) {
  errno = 0;
  char* end = nullptr;
  long long n = std::strtoll(text, &end, 10);
  if (end == text || errno == ERANGE) {
    return Errorf(sclInvalidArgument, "%s=\"%s\" is not a number", s.name, text);
  }
  int64_t scale = 1;
  if (*end == 'K' || *end == 'k')
    scale = kKiB, ++end;
  else if (*end == 'M' || *end == 'm')
    scale = kMiB, ++end;
  else if (*end == 'G' || *end == 'g')
    scale = kGiB, ++end;
  if (*end != '\0') {
    return Errorf(sclInvalidArgument, "%s=\"%s\": unexpected \"%s\"", s.name, text, end);
  }
  if (__builtin_mul_overflow(n, scale, &n) || n < s.min || n > s.max) {
    return Errorf(sclInvalidArgument, "%s=\"%s\" is out of range [%lld, %lld]", s.name, text,
                  (long long)s.min, (long long)s.max);
  }
  return int64_t(n);
}

Result<Setting> process_setting(Var v) {
  // Parsed once per process; the environment does not change under a running job.
  static std::once_flag once;
  static Result<Setting>* cache[size_t(Var::kCount)];
  std::call_once(once, [] {
    for (size_t i = 0; i < size_t(Var::kCount); ++i)
      cache[i] = new Result<Setting>(read_env(Var(i)));
  });
  return *cache[int(v)];
}

int64_t process_value(Var v) {
  Result<Setting> s = process_setting(v);
  return s.ok() ? s->value : default_value(v);
}

Result<CommConfig> resolve_comm_config(const sclConfig_t* user) {
  if (user) {
    if (user->magic != SCL_CONFIG_MAGIC || user->size < offsetof(sclConfig_t, commName) ||
        user->version == 0 || user->version > SCL_CONFIG_VERSION) {
      return Errorf(sclInvalidArgument,
                    "config: not initialised with SCL_CONFIG_INITIALIZER (size %zu, magic 0x%x, "
                    "version %u)",
                    user->size, user->magic, user->version);
    }
  }
  CommConfig c;
  auto pick = [&](Var v, long long field, long long undef, Setting* out) -> Status {
    Result<Setting> env = process_setting(v);
    if (!env.ok()) return env.status();
    *out = *env;
    if (!user || field == undef) return Status::Ok();
    const VarSpec& s = spec(v);
    if (field < s.min || field > s.max) {
      return Errorf(sclInvalidArgument, "config: %s = %lld is out of range [%lld, %lld]", s.name,
                    field, (long long)s.min, (long long)s.max);
    }
    out->value = field;
    out->text = std::to_string(field);
    out->source = Source::kConfig;
    return Status::Ok();
  };
  SCL_TRY(pick(Var::kTimeoutMs, user ? user->timeoutMs : 0, SCL_CONFIG_UNDEF_INT, &c.timeout_ms));
  SCL_TRY(pick(Var::kThreads, user ? user->threads : 0, SCL_CONFIG_UNDEF_INT, &c.threads));
  SCL_TRY(
      pick(Var::kCopyEngines, user ? user->copyEngines : 0, SCL_CONFIG_UNDEF_INT, &c.copy_engines));
  SCL_TRY(pick(Var::kStagingBytes, user ? user->stagingBytes : 0, -1, &c.staging_bytes));
  c.name = (user && user->commName) ? user->commName : "";
  return c;
}

}  // namespace stratacl
