#include "backend/work.h"

#include <sched.h>

#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>

namespace stratacl_torch {

Work::Work(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, sclComm_t comm)
    : c10d::Work(rank, type),
      outputs_(std::move(outputs)),
      comm_(comm),
      future_(
          c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
}

at::Tensor Work::input(const at::Tensor& t) {
  kept_.push_back(t);
  if (t.is_contiguous()) return t;
  at::Tensor dense = at::empty(t.sizes(), t.options().memory_format(at::MemoryFormat::Contiguous));
  copy_in(dense, t);
  return dense;
}

at::Tensor Work::output(const at::Tensor& t) {
  at::Tensor dense = input(t);
  if (!dense.is_same(t)) copy_back(t, dense);
  return dense;
}

void Work::copy_in(at::Tensor to, at::Tensor from) {
  kept_.push_back(to);
  copies_in_.emplace_back(std::move(to), std::move(from));
}

void Work::copy_back(at::Tensor to, at::Tensor from) {
  copies_.emplace_back(std::move(to), std::move(from));
}

void Work::queue(sclStream_t stream, sclStreamCallback_t fn) {
  // The stream holds a reference until the callback has run.
  Work* self = c10::intrusive_ptr<Work>::reclaim_copy(this).release();
  const sclResult_t r = sclStreamAddCallback(stream, fn, self);
  if (r != sclSuccess) {
    // Nothing will complete it: fail it now, so no wait() is left hanging.
    c10::intrusive_ptr<Work>::reclaim(self)->complete(r);
    TORCH_CHECK(false, "stratacl: sclStreamAddCallback: ", sclGetErrorString(r), ": ",
                sclGetLastError(nullptr));
  }
}

void Work::stage_in_after(sclStream_t stream) {
  if (!copies_in_.empty()) queue(stream, &Work::on_stage_in);
}

void Work::complete_after(sclStream_t stream) { queue(stream, &Work::on_stream_done); }

void Work::complete_all_after(sclStream_t stream, std::vector<c10::intrusive_ptr<Work>> works,
                              sclResult_t refused) {
  struct Group {
    std::vector<c10::intrusive_ptr<Work>> works;
    sclResult_t refused;
  };
  auto* group = new Group{std::move(works), refused};
  const auto done = [](sclStream_t, sclResult_t status, void* p) {
    std::unique_ptr<Group> g(static_cast<Group*>(p));
    for (const c10::intrusive_ptr<Work>& w : g->works)
      w->complete(g->refused != sclSuccess ? g->refused : status);
  };
  const sclResult_t r = sclStreamAddCallback(stream, done, group);
  if (r != sclSuccess) {
    done(stream, r, group);  // nothing else will complete them
    TORCH_CHECK(false, "stratacl: sclStreamAddCallback: ", sclGetErrorString(r), ": ",
                sclGetLastError(nullptr));
  }
}

void Work::on_stage_in(sclStream_t, sclResult_t, void* self) {
  // Nothing was queued between the previous Work's completion and this callback, so the status
  // it consumes is always success.
  c10::intrusive_ptr<Work> work = c10::intrusive_ptr<Work>::reclaim(static_cast<Work*>(self));
  const at::NoGradGuard no_grad;  // a copy for communication, not part of any graph
  try {
    for (auto& [to, from] : work->copies_in_) to.copy_(from);
  } catch (...) {
    work->stage_in_error_ = std::current_exception();
  }
  work->copies_in_.clear();
}

bool Work::isCompleted() {
  if (before_wait_) before_wait_();
  return c10d::Work::isCompleted();
}

c10::intrusive_ptr<c10::ivalue::Future> Work::getFuture() {
  if (before_wait_) before_wait_();
  return future_;
}

bool Work::wait(std::chrono::milliseconds timeout) {
  if (before_wait_) before_wait_();
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20);
  while (!done_.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < until)
    sched_yield();
  return c10d::Work::wait(timeout);
}

void Work::on_stream_done(sclStream_t, sclResult_t status, void* self) {
  c10::intrusive_ptr<Work> work = c10::intrusive_ptr<Work>::reclaim(static_cast<Work*>(self));
  work->complete(status);
}

void Work::complete(sclResult_t status) {
  // A failed copy into a temporary is this Work's error, whatever the calls returned.
  std::exception_ptr error = stage_in_error_;
  if (!error && status != sclSuccess) {
    error = std::make_exception_ptr(std::runtime_error(
        std::string("stratacl: ") + c10d::opTypeToString(retrieveOpType()) +
        " failed: " + sclGetErrorString(status) + ": " + sclGetLastError(comm_)));
  } else if (!error) {
    const at::NoGradGuard no_grad;  // a copy for communication, not part of any graph
    try {
      for (auto& [to, from] : copies_) to.copy_(from);
    } catch (...) {
      error = std::current_exception();
    }
  }
  kept_.clear();
  copies_.clear();
  done_.store(true, std::memory_order_release);  // before finish() wakes the waiters
  finish(error);
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

int Work::sourceRank() const {
  TORCH_CHECK(done_.load(std::memory_order_acquire),
              "stratacl: sourceRank() of a receive that has not completed (wait() first)");
  TORCH_CHECK(source_ >= 0, "stratacl: sourceRank() is defined for a receive from any source");
  return source_;
}

}  // namespace stratacl_torch
