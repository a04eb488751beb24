// The last step of a PreMulSum call: its result, multiplied by the operator's scalar.
#include <cstring>

#include "coll/call.h"
#include "core/dtype.h"
#include "reduce/reduce.h"

namespace stratacl {

void apply_premul(const Call& call, int rank) {
  if (!call.premul.on || call.count == 0) return;
  if (call.coll == Coll::kReduce && rank != call.root) return;
  uint64_t scalar = call.premul.value;
  if (call.premul.at) std::memcpy(&scalar, call.premul.at, dtype_size(call.dtype));
  reduce::scale(call.recv, call.count, call.dtype, &scalar);
}

}  // namespace stratacl
