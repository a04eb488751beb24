// The reduction operators a communicator creates (sclRedOpCreatePreMulSum): numbered from
// sclNumOps up, valid on their communicator and for their dtype until destroyed.
#pragma once

#include "coll/call.h"
#include "comm/communicator.h"
#include "core/status.h"

namespace stratacl::api {

Status create_premul(const Communicator* c, const void* scalar, const sclDataType_t& dt,
                     const sclScalarResidence_t& residence, sclRedOp_t* op);
Status destroy_premul(const Communicator* c, const sclRedOp_t& op);
// A reducing call's `op`, as the algorithms run it: a built-in operator, plus the scalar of a
// PreMulSum one. The error names `op`.
Status resolve_op(const Communicator* c, const sclRedOp_t& op, sclDataType_t dt, sclRedOp_t* run,
                  PreMul* premul);
// The communicator is going: its operators with it.
void forget_ops(const Communicator* c);

}  // namespace stratacl::api
