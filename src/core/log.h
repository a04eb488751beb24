// Lines on stderr, prefixed "StrataCL[pid]". Warnings always print, since a fallback to a slower
// path must never be silent; info lines print when STRATACL_DEBUG >= 1.
#pragma once

namespace stratacl {

void log_warning(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace stratacl
