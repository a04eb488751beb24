// The Work a collective returns. Its calls are queued on the process group's StrataCL stream;
// a host callback queued after them (sclStreamAddCallback) completes it on the stream's thread:
// it copies results out of any temporaries, then finishes the Work and its future. So wait(),
// isCompleted() and getFuture() (which DDP chains its bucket hooks on) need no polling thread.
// Temporaries are filled by a callback queued before the calls, so they read a tensor as the
// calls queued before them left it, not as it was when the call was issued.
#pragma once

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <atomic>
#include <exception>
#include <functional>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <utility>
#include <vector>

#include "stratacl/stratacl.h"

namespace stratacl_torch {

class Work final : public c10d::Work {
 public:
  Work(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, sclComm_t comm);

  // A contiguous tensor the calls may read: `t`, or a contiguous temporary filled from it in the
  // Work's turn. Kept alive.
  at::Tensor input(const at::Tensor& t);
  // A contiguous tensor the calls may read and write in place of `t`: `t` itself, or a contiguous
  // temporary filled from it in the Work's turn and copied back into `t` once the calls have
  // succeeded (as gloo does).
  at::Tensor output(const at::Tensor& t);
  // Keeps `t` alive until the calls have finished.
  void keep(at::Tensor t) { kept_.push_back(std::move(t)); }
  // Copies `from` into `to` in the Work's turn, before its calls run (stage_in_after).
  void copy_in(at::Tensor to, at::Tensor from);
  // Copies `from` into `to` once the calls have succeeded, in the order these were recorded.
  void copy_back(at::Tensor to, at::Tensor from);
  // Queues the copies into temporaries behind the calls already queued on `stream`; the Work's
  // calls are queued after it. Nothing is queued when there is nothing to copy in.
  void stage_in_after(sclStream_t stream);
  // Queues the completion behind the calls already queued on `stream`.
  void complete_after(sclStream_t stream);
  // Queues one completion of all `works` behind the calls already queued on `stream`: they
  // share the result of the calls queued since the previous completion (a group's), or
  // `refused` when that is not sclSuccess (a call of the group refused when it was issued).
  static void complete_all_after(sclStream_t stream, std::vector<c10::intrusive_ptr<Work>> works,
                                 sclResult_t refused);
  // Completes the Work now, with `status` (sclSuccess copies results back first).
  void complete(sclResult_t status);
  // Runs `f` before any wait, isCompleted or getFuture: it issues the calls the Work is held
  // back for (backend/p2p_coalescer.h).
  void before_wait(std::function<void()> f) { before_wait_ = std::move(f); }

  // Spins briefly (yielding the core) before sleeping: a call waited for right after it was
  // issued, as every synchronous c10d call is, then costs no scheduler round trip.
  bool wait(std::chrono::milliseconds timeout) override;
  bool isCompleted() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  // A receive from any source: where the library writes the sender's rank, and that rank once
  // the Work completed (c10d's sourceRank; -1 before).
  int* source_slot() { return &source_; }
  int sourceRank() const override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  static void on_stream_done(sclStream_t stream, sclResult_t status, void* self);
  static void on_stage_in(sclStream_t stream, sclResult_t status, void* self);
  // Queues `fn` on `stream` with a reference to this Work, which it holds until `fn` has run.
  void queue(sclStream_t stream, sclStreamCallback_t fn);

  std::vector<at::Tensor> outputs_;
  std::vector<at::Tensor> kept_;
  std::vector<std::pair<at::Tensor, at::Tensor>> copies_in_;  // (to, from), before the calls
  std::vector<std::pair<at::Tensor, at::Tensor>> copies_;     // (to, from), after them
  std::exception_ptr stage_in_error_;  // a copy in failed: the Work fails with it
  std::function<void()> before_wait_;
  sclComm_t comm_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::atomic<bool> done_{false};
  int source_ = -1;
};

}  // namespace stratacl_torch
