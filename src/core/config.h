// One typed registry of every STRATACL_* variable. Each value records where it came from
// (built-in default, environment, or the sclConfig_t of a communicator), so scl-info can print
// the whole configuration truthfully.
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
  kStagingBytes,
  kHeapBytes,
  kSpinNs,
  kOneShotMaxBytes,
  kEagerMaxBytes,
  kNtMinBytes,
  kIsa,
  kDebug,
  kCount
};

enum class Source { kDefault, kEnvironment, kConfig };
const char* source_name(Source s);

struct VarSpec {
  Var id;
  const char* name;  // environment variable
  bool numeric;      // numeric variables are range-checked; others are free text
  int64_t min, max;
  const char* help;
};

struct Setting {
  int64_t value = 0;
  std::string text;  // the raw text for non-numeric variables
  Source source = Source::kDefault;
};

std::span<const VarSpec> all_vars();
const VarSpec& spec(Var v);

// Process-wide value (environment over default), parsed once; a malformed value is an error
// that names the variable.
Result<Setting> process_setting(Var v);
int64_t process_value(Var v);  // for variables whose parse was already validated at init

// Parses one value with K/M/G suffixes (powers of 1024) and range checks. Exposed for tests.
Result<int64_t> parse_number(const VarSpec& s, const char* text);

// The settings that belong to one communicator: sclConfig_t fields win over the environment.
struct CommConfig {
  Setting timeout_ms, threads, copy_engines, staging_bytes;
  std::string name;
};
Result<CommConfig> resolve_comm_config(const sclConfig_t* user);

}  // namespace stratacl
