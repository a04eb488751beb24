#include "backend/moe_buffer.h"

#include <pybind11/pybind11.h>

#include "backend/process_group.h"

namespace stratacl_torch {
namespace {

void check(sclResult_t r, sclComm_t comm, const char* call) {
  TORCH_CHECK(r == sclSuccess, "stratacl: ", call, ": ", sclGetErrorString(r), ": ",
              sclGetLastError(comm));
}

sclDataType_t row_type(at::ScalarType t, const char* what) {
  switch (t) {
    case at::kBFloat16:
      return sclBfloat16;
    case at::kHalf:
      return sclFloat16;
    case at::kFloat:
      return sclFloat32;
    case at::kByte:
      return sclFloat8e4m3;  // torch 1.13 has no float8: fp8 rows travel as bytes
    default:
      TORCH_CHECK(false, "stratacl: ", what,
                  " must be bfloat16, float16, float32 or uint8 "
                  "(fp8 e4m3), not ",
                  t);
  }
}

void check_tensor(const at::Tensor& t, at::ScalarType type, std::initializer_list<int64_t> shape,
                  const char* name) {
  TORCH_CHECK(t.device().is_cpu() && t.is_contiguous(), "stratacl: ", name,
              " must be a contiguous CPU tensor");
  TORCH_CHECK(t.scalar_type() == type, "stratacl: ", name, " must be ", type, ", not ",
              t.scalar_type());
  TORCH_CHECK(t.sizes().equals(shape), "stratacl: ", name, " must have shape ",
              at::IntArrayRef(shape), ", not ", t.sizes());
}

// Runs a blocking call with the GIL released: it waits on peers. Sends and receives held back
// on any group are issued first, so the call keeps its place in issue order.
template <typename F>
sclResult_t without_gil(F&& call) {
  pybind11::gil_scoped_release no_gil;
  P2PCoalescer::flush_all();
  return call();
}

}  // namespace

MoeBuffer::MoeBuffer(const c10::intrusive_ptr<c10d::ProcessGroup>& group, const MoeOptions& options)
    : options_(options), group_(group) {
  auto* pg = dynamic_cast<ProcessGroupStrataCL*>(group.get());
  TORCH_CHECK(pg, "stratacl: MoE needs a process group of backend \"stratacl\", not ",
              group->getBackendName());
  comm_ = pg->comm();
  ranks_ = group->getSize();
  sclMoeConfig_t c = SCL_MOE_CONFIG_INITIALIZER;
  c.hidden = options.hidden;
  c.topk = options.topk;
  c.numExperts = options.experts;
  c.maxTokensPerRank = options.max_tokens;
  c.xType = row_type(options.x_type, "x dtype");
  c.recvType = options.fp8_in_flight ? sclFloat8e4m3 : c.xType;
  c.outType = row_type(options.out_type, "out dtype");
  c.layout = options.expert_major ? sclMoeExpertMajor : sclMoeTokenMajor;
  check(without_gil([&] { return sclMoeCreate(comm_, &c, &moe_); }), comm_, "sclMoeCreate");
  check(sclMoeGetInfo(moe_, &local_experts_, &max_rows_), comm_, "sclMoeGetInfo");
}

MoeBuffer::~MoeBuffer() {
  std::optional<pybind11::gil_scoped_release> no_gil;
  if (PyGILState_Check()) no_gil.emplace();
  if (stream_) {
    sclStreamSynchronize(stream_);  // errors of calls nobody waited for have nobody to tell
    sclStreamDestroy(stream_);
  }
  sclMoeDestroy(moe_);
}

sclStream_t MoeBuffer::submit_stream(bool async_op, std::initializer_list<at::Tensor> keep) {
  if (!async_op) return nullptr;
  if (!stream_) check(sclStreamCreate(&stream_), comm_, "sclStreamCreate");
  // Calls whose events nobody waited for: once the stream is idle and clean, they are done, so
  // what they hold goes (an error stays for the next wait to report).
  if (!on_finish_.empty() && sclStreamQuery(stream_) == sclSuccess) finish(on_finish_.size(), 0);
  if (on_finish_.empty()) in_flight_.clear();
  for (const at::Tensor& t : keep)
    if (t.defined()) in_flight_.push_back(t);
  return stream_;
}

void MoeBuffer::finish(size_t calls, size_t tensors) {
  std::vector<std::function<void()>> done(on_finish_.begin(), on_finish_.begin() + calls);
  on_finish_.erase(on_finish_.begin(), on_finish_.begin() + calls);
  in_flight_.erase(in_flight_.begin(), in_flight_.begin() + tensors);
  for (auto& f : done) f();
}

// Only what was queued before the wait began is completed: another thread may queue calls
// while this one waits without the GIL, and those are not known to be done.
void MoeBuffer::wait() {
  if (!stream_) return;
  const size_t calls = on_finish_.size(), tensors = in_flight_.size();
  const sclResult_t r = without_gil([&] { return sclStreamSynchronize(stream_); });
  finish(calls, tensors);
  check(r, comm_, "a MoE call queued with async_op");
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> MoeBuffer::layout(const at::Tensor& topk_idx) {
  const int64_t tokens = topk_idx.dim() == 2 ? topk_idx.size(0) : -1;
  check_tensor(topk_idx, at::kLong, {tokens, options_.topk}, "topk_idx");
  at::Tensor per_rank = at::empty({ranks_}, at::kInt);
  at::Tensor per_expert = at::empty({options_.experts}, at::kInt);
  at::Tensor in_rank = at::empty({tokens, ranks_}, at::kByte);
  check(sclMoeDispatchLayout(moe_, topk_idx.data_ptr<int64_t>(), int(tokens),
                             per_rank.data_ptr<int>(), per_expert.data_ptr<int>(),
                             in_rank.data_ptr<uint8_t>()),
        comm_, "sclMoeDispatchLayout");
  return {per_rank, per_expert, in_rank.to(at::kBool)};
}

MoeBuffer::Received MoeBuffer::dispatch(const at::Tensor& x,
                                        const std::optional<at::Tensor>& scales,
                                        const std::optional<at::Tensor>& topk_idx,
                                        const std::optional<at::Tensor>& topk_weights,
                                        const std::shared_ptr<MoeRouting>& reuse, bool async_op) {
  const int64_t tokens = x.dim() == 2 ? x.size(0) : -1;
  const int64_t h = options_.hidden, k = options_.topk;
  check_tensor(x, options_.x_type, {tokens, h}, "x");
  const bool fp8_in = options_.x_type == at::kByte;
  TORCH_CHECK(fp8_in == scales.has_value(), "stratacl: x_scales go with fp8 (uint8) rows only");
  if (scales) check_tensor(*scales, at::kFloat, {tokens, h / 128}, "x_scales");
  TORCH_CHECK(topk_idx || reuse, "stratacl: dispatch needs topk_idx or a handle to reuse");
  if (topk_idx) check_tensor(*topk_idx, at::kLong, {tokens, k}, "topk_idx");
  if (topk_weights) check_tensor(*topk_weights, at::kFloat, {tokens, k}, "topk_weights");
  if (reuse)
    TORCH_CHECK(reuse->tokens() == tokens, "stratacl: the handle routed ", reuse->tokens(),
                " tokens; x has ", tokens);

  const bool fp8_out = fp8_in || options_.fp8_in_flight;
  const at::ScalarType recv_type = fp8_out ? at::kByte : options_.x_type;
  Received r;
  const int64_t slots = int64_t(ranks_) * options_.max_tokens;
  if (options_.expert_major) {
    r.x = at::empty({local_experts_, slots, h}, recv_type);
    if (fp8_out) r.scales = at::empty({local_experts_, slots, h / 128}, at::kFloat);
  } else {
    r.x = at::empty({int64_t(max_rows_), h}, recv_type);
    if (fp8_out) r.scales = at::empty({int64_t(max_rows_), h / 128}, at::kFloat);
    r.topk_idx = at::empty({int64_t(max_rows_), k}, at::kLong);
    r.topk_weights = at::empty({int64_t(max_rows_), k}, at::kFloat);
  }
  r.tokens_per_expert = at::empty({local_experts_}, at::kInt);
  auto rows = std::make_shared<int>(0);  // written by the call, when it runs

  sclMoeTokens_t in{x.data_ptr(), scales ? scales->data_ptr<float>() : nullptr,
                    topk_idx ? topk_idx->data_ptr<int64_t>() : nullptr,
                    topk_weights ? topk_weights->data_ptr<float>() : nullptr, int(tokens)};
  sclMoeRecv_t out{r.x.data_ptr(),
                   fp8_out ? r.scales.data_ptr<float>() : nullptr,
                   options_.expert_major ? nullptr : r.topk_idx.data_ptr<int64_t>(),
                   options_.expert_major ? nullptr : r.topk_weights.data_ptr<float>(),
                   r.tokens_per_expert.data_ptr<int>(),
                   options_.expert_major ? nullptr : rows.get()};
  r.routing = reuse ? reuse : std::make_shared<MoeRouting>(nullptr, tokens);
  sclStream_t stream =
      submit_stream(async_op, {x, scales.value_or(at::Tensor()), topk_idx.value_or(at::Tensor()),
                               topk_weights.value_or(at::Tensor()), r.x, r.scales, r.topk_idx,
                               r.topk_weights, r.tokens_per_expert});
  check(without_gil([&] { return sclMoeDispatch(moe_, &in, &out, r.routing->slot(), stream); }),
        comm_, "sclMoeDispatch");
  r.rows = options_.expert_major ? slots : -1;
  // Token-major: only the received rows. The tensors shrink in place (their storage stays whole
  // underneath), so that a caller already holding them sees the count once the call finished.
  auto complete = [r, rows, h, k, expert_major = options_.expert_major]() {
    r.routing->set_rows(*rows);
    if (expert_major) return;
    r.x.resize_({*rows, h});
    if (r.scales.defined()) r.scales.resize_({*rows, h / 128});
    r.topk_idx.resize_({*rows, k});
    r.topk_weights.resize_({*rows, k});
  };
  if (stream) {
    on_finish_.push_back(complete);
  } else {
    complete();
    if (!options_.expert_major) r.rows = *rows;
  }
  return r;
}

at::Tensor MoeBuffer::combine(const std::shared_ptr<MoeRouting>& routing,
                              const at::Tensor& expert_out,
                              const std::optional<at::Tensor>& topk_weights, bool async_op) {
  TORCH_CHECK(routing && routing->get(), "stratacl: combine needs the handle of a dispatch");
  // Peers read rows of it by position: its shape must be exactly what the dispatch delivered.
  const int64_t h = options_.hidden;
  if (options_.expert_major) {
    check_tensor(expert_out, options_.out_type,
                 {local_experts_, int64_t(ranks_) * options_.max_tokens, h}, "expert outputs");
  } else {
    check_tensor(expert_out, options_.out_type, {routing->rows(), h}, "expert outputs");
  }
  if (topk_weights)
    check_tensor(*topk_weights, at::kFloat, {routing->tokens(), options_.topk}, "topk_weights");
  at::Tensor out = at::empty({routing->tokens(), options_.hidden}, options_.out_type);
  sclStream_t stream =
      submit_stream(async_op, {expert_out, topk_weights.value_or(at::Tensor()), out});
  if (stream) on_finish_.push_back([routing] {});  // the handle lives until the combine ran
  check(without_gil([&] {
          return sclMoeCombine(moe_, routing->get(), expert_out.data_ptr(),
                               topk_weights ? topk_weights->data_ptr<float>() : nullptr,
                               out.data_ptr(), stream);
        }),
        comm_, "sclMoeCombine");
  return out;
}

}  // namespace stratacl_torch
