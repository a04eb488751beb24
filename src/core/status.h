// Status and Result<T>: the library's internal error plumbing. An error carries an sclResult_t
// code and a message that names the argument, rank or call at fault; the C API boundary turns it
// into the return code and the text of sclGetLastError.
#pragma once

#include <cstdarg>
#include <string>
#include <utility>
#include <variant>

#include "stratacl/stratacl.h"

namespace stratacl {

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(sclResult_t code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == sclSuccess; }
  sclResult_t code() const { return code_; }
  const std::string& message() const { return message_; }
  // The rank whose failure caused this error (-1: none or unknown), so a revocation can name
  // the root cause to every peer.
  int culprit() const { return culprit_; }
  Status with_culprit(int rank) && {
    culprit_ = rank;
    return std::move(*this);
  }

 private:
  sclResult_t code_ = sclSuccess;
  std::string message_;
  int culprit_ = -1;
};

// printf-style constructors for the common codes.
Status Errorf(sclResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
Status SystemErrorf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));  // appends errno

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT
  bool ok() const { return v_.index() == 0; }
  T& value() { return std::get<0>(v_); }
  const T& value() const { return std::get<0>(v_); }
  T& operator*() { return value(); }
  T* operator->() { return &value(); }
  Status status() const { return ok() ? Status() : std::get<1>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace stratacl

// Error plumbing for the bodies of functions that return Status or a Result<U>.

// Returns the Status of `expr` if it failed.
#define SCL_TRY(expr)                                  \
  do {                                                 \
    ::stratacl::Status scl_try_status_ = (expr);       \
    if (!scl_try_status_.ok()) return scl_try_status_; \
  } while (0)

// Evaluates `expr`, a Result<T>: returns its Status if it failed, else moves its value into
// `lhs`, a declaration (`auto fd`, `Heap* heap`) or a variable already declared (`cb_`):
//   SCL_ASSIGN_OR_RETURN(UniqueFd fd, tcp_listen(&addr));
// It expands to several statements (not the lone body of an unbraced if or loop), and `lhs`
// may hold no unparenthesised comma (`expr` may).
#define SCL_ASSIGN_OR_RETURN(lhs, ...) \
  SCL_ASSIGN_OR_RETURN_IMPL_(SCL_CONCAT_(scl_result_, __COUNTER__), lhs, __VA_ARGS__)
#define SCL_ASSIGN_OR_RETURN_IMPL_(result, lhs, ...) \
  auto result = (__VA_ARGS__);                       \
  if (!result.ok()) return result.status();          \
  lhs = std::move(result.value())
#define SCL_CONCAT_(a, b) SCL_CONCAT_IMPL_(a, b)
#define SCL_CONCAT_IMPL_(a, b) a##b
