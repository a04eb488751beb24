#include "api/premul_ops.h"

#include <cstring>
#include <map>
#include <mutex>

#include "api/validate.h"
#include "core/dtype.h"

namespace stratacl::api {
namespace {

struct Op {
  sclDataType_t dtype;
  PreMul premul;
};
struct CommOps {
  std::map<int, Op> ops;  // by number, ascending
};

std::mutex g_mu;
std::map<const Communicator*, CommOps>& registry() {
  static auto* m = new std::map<const Communicator*, CommOps>();
  return *m;
}

int raw(const sclRedOp_t& op) {
  int v;
  std::memcpy(&v, &op, sizeof v);
  return v;
}

}  // namespace

Status create_premul(const Communicator* c, const void* scalar, const sclDataType_t& dt,
                     const sclScalarResidence_t& residence, sclRedOp_t* op) {
  if (!op) return Errorf(sclInvalidArgument, "op: NULL output pointer");
  SCL_TRY(check_dtype(dt));
  int where;
  std::memcpy(&where, &residence, sizeof where);
  if (where != sclScalarDevice && where != sclScalarHostImmediate) {
    return Errorf(sclInvalidArgument,
                  "residence: %d (use sclScalarDevice or sclScalarHostImmediate)", where);
  }
  if (!scalar) return Errorf(sclInvalidArgument, "scalar: NULL pointer");
  Op o{dt, PreMul{true, 0, nullptr}};
  if (where == sclScalarHostImmediate) {
    std::memcpy(&o.premul.value, scalar, dtype_size(dt));
  } else {
    o.premul.at = scalar;  // read by every call that uses the operator, when it runs
  }
  std::lock_guard lock(g_mu);
  CommOps& mine = registry()[c];
  // The lowest free number: a framework that makes and destroys one per call never runs out.
  int id = sclNumOps;
  for (const auto& [used, _] : mine.ops) {
    if (used != id) break;
    ++id;
  }
  if (id == sclMaxRedOp)
    return Errorf(sclInvalidUsage, "op: this communicator has too many operators");
  mine.ops.emplace(id, o);
  *op = sclRedOp_t(id);
  return Status::Ok();
}

Status destroy_premul(const Communicator* c, const sclRedOp_t& op) {
  const int v = raw(op);
  if (v >= 0 && v < sclNumOps)
    return Errorf(sclInvalidArgument, "op: %d is a built-in operator, not one to destroy", v);
  std::lock_guard lock(g_mu);
  auto it = registry().find(c);
  if (it == registry().end() || it->second.ops.erase(v) == 0)
    return Errorf(sclInvalidArgument, "op: %d was not created on this communicator", v);
  return Status::Ok();
}

Status resolve_op(const Communicator* c, const sclRedOp_t& op, sclDataType_t dt, sclRedOp_t* run,
                  PreMul* premul) {
  const int v = raw(op);
  *premul = PreMul{};
  if (v >= 0 && v < sclNumOps) {
    *run = sclRedOp_t(v);
    return Status::Ok();
  }
  std::lock_guard lock(g_mu);
  auto it = registry().find(c);
  auto found = it == registry().end() ? std::map<int, Op>::iterator{} : it->second.ops.find(v);
  if (it == registry().end() || found == it->second.ops.end()) {
    return Errorf(sclInvalidArgument,
                  "op: %d is not a valid sclRedOp_t (built-in, or created on this communicator "
                  "and not destroyed)",
                  v);
  }
  if (found->second.dtype != dt) {
    return Errorf(sclInvalidArgument,
                  "op: %d was created for datatype %s, the call passes %s (they must match)", v,
                  dtype_name(found->second.dtype), dtype_name(dt));
  }
  *run = sclSum;
  *premul = found->second.premul;
  return Status::Ok();
}

void forget_ops(const Communicator* c) {
  std::lock_guard lock(g_mu);
  registry().erase(c);
}

}  // namespace stratacl::api
