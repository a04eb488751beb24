// PreMulSum calls (sclRedOpCreatePreMulSum): every rank's input is multiplied by that rank's
// scalar, then summed, as NCCL defines it. The scaled input lives in a heap block for the call.
#pragma once

#include "coll/call.h"
#include "core/status.h"

namespace stratacl {

class PremulInput {
 public:
  PremulInput() = default;
  PremulInput(const PremulInput&) = delete;
  PremulInput& operator=(const PremulInput&) = delete;
  ~PremulInput();  // after the call: every peer has read the block by then
  // `scaled`: `call` as a plain sum, its input this rank's scaled copy when it is a PreMulSum.
  Status prepare(const Call& call, int nranks, Call* scaled);

 private:
  void* block_ = nullptr;
};

}  // namespace stratacl
