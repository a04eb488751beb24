// How a torch tensor and a c10d ReduceOp become StrataCL's element type, count and operation.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <torch/csrc/distributed/c10d/Types.hpp>

#include "stratacl/stratacl.h"

namespace stratacl_torch {

// A contiguous tensor's memory as StrataCL elements.
struct Elements {
  void* ptr;
  size_t count;
  sclDataType_t type;
};

// For moving data: any dtype. Types StrataCL has are themselves; the rest (int16, bool, complex)
// move as bytes, which is exact for a copy.
Elements moved(const at::Tensor& t);
// How many of moved()'s elements one element of `t` is: 1, or its size in bytes.
size_t moved_per_element(const at::Tensor& t);

// For reducing: the StrataCL type and op, or a c10::Error naming what is not supported. bool
// reduces as uint8 with MAX for SUM (logical or) and MIN for PRODUCT (logical and), as NCCL does;
// complex SUM and AVG reduce their real and imaginary parts as pairs of reals.
// PREMUL_SUM (torch's _make_nccl_premul_sum) carries its factor, which reduce_with() turns into
// a PreMulSum operator of the communicator.
struct Reduction {
  Elements elements;
  sclRedOp_t op;
  bool premul = false;
  double factor = 0;
};
Reduction reduced(const at::Tensor& t, const c10d::ReduceOp& op);
// Issues `call` with the reduction's operator: its built-in one, or a PreMulSum operator made
// for the call and destroyed once it is issued (an issued call keeps its scalar).
sclResult_t reduce_with(const Reduction& r, sclComm_t comm,
                        const std::function<sclResult_t(sclRedOp_t)>& call);

// Throws unless `t` is a dense CPU tensor (name says which argument).
void check_cpu_dense(const at::Tensor& t, const char* name);

}  // namespace stratacl_torch
