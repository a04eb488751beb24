// One typed registry of every STRATACL_* configuration variable: its kind, range or choices,
// default and meaning live in one table row. Each value records where it came from (built-in
// default, environment, or the sclConfig_t of a communicator), so scl-info can print the whole
// configuration truthfully. (The launcher's own variables, such as STRATACL_RANK, are a protocol
// between stratarun and the library, not configuration: bootstrap/launcher_env.h reads them.)
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/status.h"
#include "stratacl/stratacl.h"

namespace stratacl {

enum class Var : int {
  kTimeoutMs,
  kThreads,
  kCopyEngines,
  kWorkerMinBytes,
  kHostGbps,
  kStagingBytes,
  kHeapBytes,
  kSpinNs,
  kOneShotMaxBytes,
  kEagerMaxBytes,
  kNtMinBytes,
  kIsa,
  kBootstrapAddr,
  kHostId,
  kNetProvider,
  kNetLostMs,
  kNetOneSidedMinBytes,
  kNetDoublingMinHosts,
  kNetTreeRadix,
  kNetPaceCalls,
  kDebug,
  kTorchCacheBytes,
  kCount
};

// The largest transfer between hosts sent eager over rxm/tcp: both rxm's eager limit, which
// net/provider.cc sets over tcp, and the default of STRATACL_NET_ONE_SIDED_MIN_BYTES, from which
// (inclusive) rail transfers and the blocks of alltoall, gather and scatter go one-sided (from
// less where a rank takes them from three or more ranks at once: net::Rail::one_sided_at).
// One decision, so one value (docs/PERFORMANCE.md, "The rxm eager limit").
inline constexpr int64_t kNetEagerMaxBytes = 256 * 1024;

enum class Source { kDefault, kEnvironment, kConfig };
const char* source_name(Source s);

enum class VarKind {
  kNumber,  // an integer with optional K/M/G suffix, range-checked
  kChoice,  // one word of `choices`
  kText     // free text (an address, a host identity); empty means unset
};

// A row of the registry (core/config.cc), written with designated initializers: a field a row
// leaves out has the value below.
struct VarSpec {
  Var id;
  const char* name;  // the environment variable
  VarKind kind;
  int64_t min = 0, max = 0;                   // kNumber: the accepted range
  int64_t number_default = 0;                 // kNumber: the default when computed_default is null
  int64_t (*computed_default)() = nullptr;    // kNumber: a default that depends on the machine
  std::span<const char* const> choices = {};  // kChoice: choices[0] is the default
  const char* help;
};

struct Setting {
  int64_t value = 0;  // kNumber: the number; kChoice: the index of the choice
  std::string text;   // as given (or the default, printed)
  Source source = Source::kDefault;
};

std::span<const VarSpec> all_vars();
const VarSpec& spec(Var v);

// Process-wide value (environment over default), parsed once; a malformed value is an error
// that names the variable.
Result<Setting> process_setting(Var v);
// For variables whose parse was already validated (check_environment); the default otherwise.
int64_t process_value(Var v);
std::string process_text(Var v);
// Every STRATACL_* variable parses: communicator init calls this, so a typo anywhere is an error
// that names the variable instead of a silent default.
Status check_environment();

// Parses one value of `s` as its kind says, with range or choice checks. Exposed for tests.
Result<Setting> parse_setting(const VarSpec& s, const char* text);

// The settings that belong to one communicator: sclConfig_t fields win over the environment.
struct CommConfig {
  Setting timeout_ms, threads, copy_engines, staging_bytes;
  std::string name;
  bool blocking = true;  // sclConfig_t.blocking (NCCL's non-blocking mode when false)
};
Result<CommConfig> resolve_comm_config(const sclConfig_t* user);

}  // namespace stratacl
