#include "core/log.h"

#include <unistd.h>

#include <cstdarg>
#include <cstdio>

#include "core/config.h"

namespace stratacl {
namespace {

void emit(const char* level, const char* fmt, va_list ap) {
  char text[1024];
  vsnprintf(text, sizeof text, fmt, ap);
  // One write(2) per line, so lines of concurrent ranks do not interleave.
  char line[1100];
  const int n = snprintf(line, sizeof line, "StrataCL[%d] %s: %s\n", int(getpid()), level, text);
  if (n > 0) (void)!write(STDERR_FILENO, line, size_t(n) < sizeof line ? size_t(n) : sizeof line);
}

}  // namespace

void log_warning(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit("warning", fmt, ap);
  va_end(ap);
}

void log_info(const char* fmt, ...) {
  if (process_value(Var::kDebug) < 1) return;
  va_list ap;
  va_start(ap, fmt);
  emit("info", fmt, ap);
  va_end(ap);
}

}  // namespace stratacl
