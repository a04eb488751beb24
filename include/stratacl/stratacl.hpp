// StrataCL C++20 facade: RAII owners for communicators, streams and heap buffers, exceptions
// for errors, and std::span overloads whose dtype comes from the element type.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>

#include "stratacl/stratacl.h"

namespace scl {

class Error : public std::runtime_error {
 public:
  Error(sclResult_t code, const std::string& what) : std::runtime_error(what), code_(code) {}
  sclResult_t code() const { return code_; }

 private:
  sclResult_t code_;
};

inline void check(sclResult_t r, sclComm_t comm = nullptr) {
  if (r != sclSuccess) {
    throw Error(r, std::string(sclGetErrorString(r)) + ": " + sclGetLastError(comm));
  }
}

template <typename T>
constexpr sclDataType_t dtype_of();
template <>
constexpr sclDataType_t dtype_of<int8_t>() {
  return sclInt8;
}
template <>
constexpr sclDataType_t dtype_of<uint8_t>() {
  return sclUint8;
}
template <>
constexpr sclDataType_t dtype_of<int32_t>() {
  return sclInt32;
}
template <>
constexpr sclDataType_t dtype_of<uint32_t>() {
  return sclUint32;
}
template <>
constexpr sclDataType_t dtype_of<int64_t>() {
  return sclInt64;
}
template <>
constexpr sclDataType_t dtype_of<uint64_t>() {
  return sclUint64;
}
template <>
constexpr sclDataType_t dtype_of<float>() {
  return sclFloat32;
}
template <>
constexpr sclDataType_t dtype_of<double>() {
  return sclFloat64;
}

// A typed buffer in the registration-on-allocation heap.
template <typename T>
class HeapBuffer {
 public:
  explicit HeapBuffer(size_t count) : count_(count) {
    void* p = nullptr;
    check(sclMemAlloc(&p, count * sizeof(T) > 0 ? count * sizeof(T) : 1));
    data_ = static_cast<T*>(p);
  }
  HeapBuffer(HeapBuffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), count_(std::exchange(o.count_, 0)) {}
  HeapBuffer& operator=(HeapBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(count_, o.count_);
    return *this;
  }
  ~HeapBuffer() {
    if (data_) sclMemFree(data_);
  }
  T* data() { return data_; }
  size_t size() const { return count_; }
  std::span<T> span() { return {data_, count_}; }
  T& operator[](size_t i) { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + count_; }

 private:
  T* data_ = nullptr;
  size_t count_ = 0;
};

class Stream {
 public:
  Stream() { check(sclStreamCreate(&s_)); }
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  ~Stream() {
    if (s_) sclStreamDestroy(s_);
  }
  void synchronize() { check(sclStreamSynchronize(s_)); }
  bool done() { return sclStreamQuery(s_) != sclInProgress; }
  sclStream_t get() const { return s_; }

 private:
  sclStream_t s_ = nullptr;
};

class Comm {
 public:
  static Comm from_env() {
    sclComm_t c = nullptr;
    check(sclCommInitFromEnv(&c));
    return Comm(c);
  }
  static Comm init_rank(int nranks, const sclUniqueId& id, int rank) {
    sclComm_t c = nullptr;
    check(sclCommInitRank(&c, nranks, id, rank));
    return Comm(c);
  }
  explicit Comm(sclComm_t c) : c_(c) {}
  Comm(Comm&& o) noexcept : c_(std::exchange(o.c_, nullptr)) {}
  Comm& operator=(Comm&& o) noexcept {
    std::swap(c_, o.c_);
    return *this;
  }
  ~Comm() {
    if (c_) sclCommDestroy(c_);
  }

  int rank() const {
    int r = 0;
    check(sclCommUserRank(c_, &r), c_);
    return r;
  }
  int size() const {
    int n = 0;
    check(sclCommCount(c_, &n), c_);
    return n;
  }
  Comm split(int color, int key) {
    sclComm_t n = nullptr;
    check(sclCommSplit(c_, color, key, &n, nullptr), c_);
    return Comm(n);
  }
  sclComm_t get() const { return c_; }

  template <typename T>
  void all_reduce(std::span<const T> send, std::span<T> recv, sclRedOp_t op = sclSum,
                  sclStream_t s = nullptr) {
    if (send.size() != recv.size())
      throw Error(sclInvalidArgument, "all_reduce: span sizes differ");
    check(sclAllReduce(send.data(), recv.data(), send.size(), dtype_of<T>(), op, c_, s), c_);
  }
  template <typename T>
  void all_reduce(std::span<T> inout, sclRedOp_t op = sclSum, sclStream_t s = nullptr) {
    check(sclAllReduce(inout.data(), inout.data(), inout.size(), dtype_of<T>(), op, c_, s), c_);
  }
  template <typename T>
  void broadcast(std::span<T> buf, int root, sclStream_t s = nullptr) {
    check(sclBroadcast(buf.data(), buf.data(), buf.size(), dtype_of<T>(), root, c_, s), c_);
  }
  template <typename T>
  void all_gather(std::span<const T> send, std::span<T> recv, sclStream_t s = nullptr) {
    if (recv.size() != send.size() * size_t(size()))
      throw Error(sclInvalidArgument, "all_gather: recv must hold size() * send.size()");
    check(sclAllGather(send.data(), recv.data(), send.size(), dtype_of<T>(), c_, s), c_);
  }
  template <typename T>
  void reduce_scatter(std::span<const T> send, std::span<T> recv, sclRedOp_t op = sclSum,
                      sclStream_t s = nullptr) {
    if (send.size() != recv.size() * size_t(size()))
      throw Error(sclInvalidArgument, "reduce_scatter: send must hold size() * recv.size()");
    check(sclReduceScatter(send.data(), recv.data(), recv.size(), dtype_of<T>(), op, c_, s), c_);
  }
  template <typename T>
  void all_to_all(std::span<const T> send, std::span<T> recv, sclStream_t s = nullptr) {
    const size_t n = size_t(size());
    if (send.size() != recv.size() || send.size() % n)
      throw Error(sclInvalidArgument, "all_to_all: spans must be equal multiples of size()");
    check(sclAlltoAll(send.data(), recv.data(), send.size() / n, dtype_of<T>(), c_, s), c_);
  }
  void barrier(sclStream_t s = nullptr) { check(sclBarrier(c_, s), c_); }

 private:
  sclComm_t c_ = nullptr;
};

// The routing of one MoE dispatch (sclMoeDispatch); drives its combines. Owns the handle.
class MoeHandle {
 public:
  MoeHandle() = default;
  explicit MoeHandle(sclMoeHandle_t h) : h_(h) {}
  MoeHandle(MoeHandle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  MoeHandle& operator=(MoeHandle&& o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~MoeHandle() {
    if (h_) sclMoeHandleDestroy(h_);
  }
  sclMoeHandle_t get() const { return h_; }
  sclMoeHandle_t* out() { return &h_; }

 private:
  sclMoeHandle_t h_ = nullptr;
};

// A MoE dispatch/combine plan bound to a communicator (sclMoeCreate). Creating and destroying it
// are collective; the communicator must outlive it.
class Moe {
 public:
  Moe(const Comm& comm, const sclMoeConfig_t& config) : comm_(comm.get()) {
    check(sclMoeCreate(comm_, &config, &m_), comm_);
  }
  Moe(Moe&& o) noexcept : comm_(o.comm_), m_(std::exchange(o.m_, nullptr)) {}
  ~Moe() {
    if (m_) sclMoeDestroy(m_);
  }
  int local_experts() const {
    int n = 0;
    check(sclMoeGetInfo(m_, &n, nullptr), comm_);
    return n;
  }
  size_t max_recv_rows() const {
    size_t n = 0;
    check(sclMoeGetInfo(m_, nullptr, &n), comm_);
    return n;
  }
  // A new routing: the returned handle drives the combines of this dispatch.
  MoeHandle dispatch(const sclMoeTokens_t& in, sclMoeRecv_t& out, sclStream_t s = nullptr) {
    MoeHandle h;
    check(sclMoeDispatch(m_, &in, &out, h.out(), s), comm_);
    return h;
  }
  // The routing of `reuse` again (in.topkIdx may be NULL): the backward of combine.
  void dispatch(const sclMoeTokens_t& in, sclMoeRecv_t& out, MoeHandle& reuse,
                sclStream_t s = nullptr) {
    if (!reuse.get()) throw Error(sclInvalidArgument, "dispatch: reuse holds no handle");
    check(sclMoeDispatch(m_, &in, &out, reuse.out(), s), comm_);
  }
  void combine(const MoeHandle& h, const void* expert_out, const float* topk_weights, void* out,
               sclStream_t s = nullptr) {
    check(sclMoeCombine(m_, h.get(), expert_out, topk_weights, out, s), comm_);
  }
  sclMoe_t get() const { return m_; }

 private:
  sclComm_t comm_ = nullptr;
  sclMoe_t m_ = nullptr;
};

}  // namespace scl
