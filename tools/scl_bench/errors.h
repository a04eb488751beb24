// Library failures travel as exceptions to main, which reports them and exits with status 3.
#ifndef STRATACL_TOOLS_SCL_BENCH_ERRORS_H_
#define STRATACL_TOOLS_SCL_BENCH_ERRORS_H_

#include <exception>
#include <string>
#include <utility>

#include "stratacl/stratacl.h"

namespace stratacl::bench {

class LibraryError : public std::exception {
 public:
  // `detail` replaces sclGetLastError in the message when the failure is not the library's
  // (posix_memalign, for instance).
  LibraryError(sclResult_t result, std::string call, std::string detail = "")
      : result_(result), call_(std::move(call)), detail_(std::move(detail)) {}

  const char* what() const noexcept override { return call_.c_str(); }
  sclResult_t result() const { return result_; }
  const std::string& call() const { return call_; }
  const std::string& detail() const { return detail_; }

 private:
  sclResult_t result_;
  std::string call_;
  std::string detail_;
};

inline void require(sclResult_t result, const char* call) {
  if (result != sclSuccess) throw LibraryError(result, call);
}

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_ERRORS_H_
