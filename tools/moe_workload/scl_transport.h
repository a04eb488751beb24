// The alltoallv baseline (alltoallv_exchange.h) over StrataCL's own sclAlltoAll/sclAlltoAllv, with
// its staging buffers from the heap (zero-copy alltoallv) or from malloc (staged). Errors throw
// scl::Error.
#pragma once

#include <cstdlib>

#include "alltoallv_exchange.h"
#include "stratacl/stratacl.hpp"

namespace moe_workload {

class SclTransport : public Transport {
 public:
  SclTransport(sclComm_t comm, bool heap) : comm_(comm), heap_(heap) {}

  void* alloc(size_t bytes) override {
    void* p = nullptr;
    if (heap_) {
      scl::check(sclMemAlloc(&p, bytes), comm_);
    } else if (posix_memalign(&p, 64, bytes) != 0) {
      throw scl::Error(sclSystemError, "posix_memalign failed");
    }
    return p;
  }
  void release(void* p) override {
    if (heap_) {
      sclMemFree(p);
    } else {
      free(p);
    }
  }
  void alltoall_counts(const int64_t* send, int64_t* recv) override {
    scl::check(sclAlltoAll(send, recv, 1, sclInt64, comm_, nullptr), comm_);
  }
  void alltoallv(const void* send, const size_t* send_bytes, const size_t* send_at, void* recv,
                 const size_t* recv_bytes, const size_t* recv_at) override {
    scl::check(sclAlltoAllv(send, send_bytes, send_at, recv, recv_bytes, recv_at, sclUint8, comm_,
                            nullptr),
               comm_);
  }

 private:
  sclComm_t comm_;
  bool heap_;
};

}  // namespace moe_workload
