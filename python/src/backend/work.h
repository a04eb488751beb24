// The Work a collective returns. Its calls are queued on the process group's StrataCL stream;
// a host callback queued after them (sclStreamAddCallback) completes it on the stream's thread:
// it copies results out of any temporaries, then finishes the Work and its future. So wait(),
// isCompleted() and getFuture() (which DDP chains its bucket hooks on) need no polling thread.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <atomic>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <utility>
#include <vector>

#include "stratacl/stratacl.h"

namespace stratacl_torch {

class Work final : public c10d::Work {
 public:
  Work(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, sclComm_t comm);

  // A contiguous tensor the calls may read: `t`, or a contiguous copy of it. Kept alive.
  at::Tensor input(const at::Tensor& t);
  // A contiguous tensor the calls may read and write in place of `t`: `t` itself, or a contiguous
  // copy that is copied back into `t` once the calls have succeeded (as gloo does).
  at::Tensor output(const at::Tensor& t);
  // Keeps `t` alive until the calls have finished.
  void keep(at::Tensor t) { kept_.push_back(std::move(t)); }
  // Copies `from` into `to` once the calls have succeeded, in the order these were recorded.
  void copy_back(at::Tensor to, at::Tensor from);
  // Queues the completion behind the calls already queued on `stream`.
  void complete_after(sclStream_t stream);

  // Spins briefly (yielding the core) before sleeping: a call waited for right after it was
  // issued, as every synchronous c10d call is, then costs no scheduler round trip.
  bool wait(std::chrono::milliseconds timeout) override;
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  static void on_stream_done(sclStream_t stream, sclResult_t status, void* self);
  void complete(sclResult_t status);

  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> kept_;
  std::vector<std::pair<at::Tensor, at::Tensor>> copies_;  // (to, from)
  sclComm_t comm_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::atomic<bool> done_{false};
};

}  // namespace stratacl_torch
