#include "backend/tensor_types.h"

#include <cstring>

namespace stratacl_torch {
namespace {

bool native_type(at::ScalarType s, sclDataType_t* out) {
  switch (s) {
    case at::kChar:
      *out = sclInt8;
      return true;
    case at::kByte:
      *out = sclUint8;
      return true;
    case at::kInt:
      *out = sclInt32;
      return true;
    case at::kLong:
      *out = sclInt64;
      return true;
    case at::kHalf:
      *out = sclFloat16;
      return true;
    case at::kFloat:
      *out = sclFloat32;
      return true;
    case at::kDouble:
      *out = sclFloat64;
      return true;
    case at::kBFloat16:
      *out = sclBfloat16;
      return true;
    default:
      return false;
  }
}

const char* op_name(c10d::ReduceOp::RedOpType op) {
  switch (op) {
    case c10d::ReduceOp::BAND:
      return "BAND";
    case c10d::ReduceOp::BOR:
      return "BOR";
    case c10d::ReduceOp::BXOR:
      return "BXOR";
    case c10d::ReduceOp::PREMUL_SUM:
      return "PREMUL_SUM";
    default:
      return "this op";
  }
}

}  // namespace

void check_cpu_dense(const at::Tensor& t, const char* name) {
  TORCH_CHECK(t.defined(), "stratacl: ", name, " is an undefined tensor");
  TORCH_CHECK(t.device().is_cpu(), "stratacl: ", name, " is on ", t.device(),
              "; this backend takes CPU tensors");
  TORCH_CHECK(t.layout() == at::kStrided, "stratacl: ", name, " is not a dense (strided) tensor");
}

Elements moved(const at::Tensor& t) {
  sclDataType_t type;
  if (native_type(t.scalar_type(), &type)) return {t.data_ptr(), size_t(t.numel()), type};
  return {t.data_ptr(), size_t(t.numel()) * t.element_size(), sclUint8};
}

size_t moved_per_element(const at::Tensor& t) {
  sclDataType_t type;
  return native_type(t.scalar_type(), &type) ? 1 : size_t(t.element_size());
}

Reduction reduced(const at::Tensor& t, const c10d::ReduceOp& op) {
  sclRedOp_t o;
  switch (op.op_) {
    case c10d::ReduceOp::SUM:
      o = sclSum;
      break;
    case c10d::ReduceOp::AVG:
      o = sclAvg;
      break;
    case c10d::ReduceOp::PRODUCT:
      o = sclProd;
      break;
    case c10d::ReduceOp::MIN:
      o = sclMin;
      break;
    case c10d::ReduceOp::MAX:
      o = sclMax;
      break;
    case c10d::ReduceOp::PREMUL_SUM:
      o = sclSum;
      break;
    default:
      TORCH_CHECK(false, "stratacl: ReduceOp.", op_name(op.op_),
                  " is not supported (StrataCL reduces with SUM, AVG, PRODUCT, MIN and MAX)");
  }
  const at::ScalarType s = t.scalar_type();
  sclDataType_t type;
  if (op.op_ == c10d::ReduceOp::PREMUL_SUM) {
    const auto* factor = dynamic_cast<const c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
    TORCH_CHECK(factor, "stratacl: ReduceOp.PREMUL_SUM without its factor");
    TORCH_CHECK(at::isFloatingType(s) || at::isComplexType(s),
                "stratacl: ReduceOp.PREMUL_SUM is defined for floating and complex tensors, not ",
                s);
    Reduction r = reduced(t, c10d::ReduceOp(c10d::ReduceOp::SUM));
    r.premul = true;
    // A tensor factor (NCCL reads it on the device while the call runs) is read when issued.
    r.factor = factor->tensor_factors.empty() ? factor->double_factor
                                              : factor->tensor_factors.front().item<double>();
    return r;
  }
  if (native_type(s, &type)) return {{t.data_ptr(), size_t(t.numel()), type}, o};
  if (s == at::kBool) {
    TORCH_CHECK(o != sclAvg, "stratacl: ReduceOp.AVG is not defined for bool tensors");
    if (o == sclSum) o = sclMax;
    if (o == sclProd) o = sclMin;
    return {{t.data_ptr(), size_t(t.numel()), sclUint8}, o};
  }
  if (s == at::kComplexFloat || s == at::kComplexDouble) {
    TORCH_CHECK(o == sclSum || o == sclAvg,
                "stratacl: complex tensors reduce with SUM or AVG only");
    return {{t.data_ptr(), 2 * size_t(t.numel()), s == at::kComplexFloat ? sclFloat32 : sclFloat64},
            o};
  }
  TORCH_CHECK(false, "stratacl: no reduction for dtype ", s,
              " (StrataCL reduces int8, uint8, int32, int64, float16, bfloat16, float32, "
              "float64, bool and complex)");
}

}  // namespace stratacl_torch

namespace stratacl_torch {
namespace {

// `f` as a value of `t`, in its bytes.
uint64_t scalar_of(double f, sclDataType_t t) {
  uint64_t bits = 0;
  const auto put = [&bits](auto v) { std::memcpy(&bits, &v, sizeof(v)); };
  switch (t) {
    case sclInt8:
      put(int8_t(f));
      break;
    case sclUint8:
      put(uint8_t(f));
      break;
    case sclInt32:
      put(int32_t(f));
      break;
    case sclUint32:
      put(uint32_t(f));
      break;
    case sclInt64:
      put(int64_t(f));
      break;
    case sclUint64:
      put(uint64_t(f));
      break;
    case sclFloat16:
      put(at::Half(float(f)).x);
      break;
    case sclBfloat16:
      put(at::BFloat16(float(f)).x);
      break;
    case sclFloat32:
      put(float(f));
      break;
    default:
      put(f);
      break;
  }
  return bits;
}

}  // namespace

sclResult_t reduce_with(const Reduction& r, sclComm_t comm,
                        const std::function<sclResult_t(sclRedOp_t)>& call) {
  if (!r.premul) return call(r.op);
  uint64_t scalar = scalar_of(r.factor, r.elements.type);
  sclRedOp_t op;
  const sclResult_t made =
      sclRedOpCreatePreMulSum(&op, &scalar, r.elements.type, sclScalarHostImmediate, comm);
  if (made != sclSuccess) return made;
  const sclResult_t issued = call(op);
  sclRedOpDestroy(op, comm);
  return issued;
}

}  // namespace stratacl_torch
