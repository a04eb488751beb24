#include "core/status.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace stratacl {
namespace {
std::string vformat(const char* fmt, va_list ap) {
  char buf[1024];
  vsnprintf(buf, sizeof buf, fmt, ap);
  return buf;
}
}  // namespace

Status Errorf(sclResult_t code, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  return Status(code, std::move(msg));
}

Status SystemErrorf(const char* fmt, ...) {
  int err = errno;
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  return Status(sclSystemError, msg + ": " + std::strerror(err));
}

}  // namespace stratacl
