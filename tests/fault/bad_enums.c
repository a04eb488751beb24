/* Out-of-range enum values, passed the way C callers can: as plain ints. (Forming such a value
 * in C++ would itself be undefined behaviour, so these calls live in C.) */
#include "stratacl/stratacl.h"

sclResult_t call_allreduce_with_dtype(const void* send, void* recv, size_t count, int dtype,
                                      sclComm_t comm) {
  return sclAllReduce(send, recv, count, (sclDataType_t)dtype, sclSum, comm, NULL);
}

sclResult_t call_allreduce_with_op(const void* send, void* recv, size_t count, int op,
                                   sclComm_t comm) {
  return sclAllReduce(send, recv, count, sclFloat32, (sclRedOp_t)op, comm, NULL);
}
