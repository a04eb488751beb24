#include "backend/work.h"

#include <sched.h>

#include <chrono>
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
  kept_.push_back(t.contiguous());
  return kept_.back();
}

at::Tensor Work::output(const at::Tensor& t) {
  kept_.push_back(t);
  if (t.is_contiguous()) return t;
  at::Tensor dense = t.contiguous();
  copy_back(t, dense);
  return dense;
}

void Work::copy_back(at::Tensor to, at::Tensor from) {
  copies_.emplace_back(std::move(to), std::move(from));
}

void Work::complete_after(sclStream_t stream) {
  // The stream holds a reference until the callback has run.
  Work* self = c10::intrusive_ptr<Work>::reclaim_copy(this).release();
  const sclResult_t r = sclStreamAddCallback(stream, &Work::on_stream_done, self);
  if (r != sclSuccess) {
    // Nothing will complete it: fail it now, so no wait() is left hanging.
    c10::intrusive_ptr<Work>::reclaim(self)->complete(r);
    TORCH_CHECK(false, "stratacl: sclStreamAddCallback: ", sclGetErrorString(r), ": ",
                sclGetLastError(nullptr));
  }
}

bool Work::wait(std::chrono::milliseconds timeout) {
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
  std::exception_ptr error;
  if (status != sclSuccess) {
    error = std::make_exception_ptr(std::runtime_error(
        std::string("stratacl: ") + c10d::opTypeToString(retrieveOpType()) +
        " failed: " + sclGetErrorString(status) + ": " + sclGetLastError(comm_)));
  } else {
    try {
      for (auto& [to, from] : copies_) to.copy_(from);
    } catch (...) {
      error = std::current_exception();
    }
  }
  kept_.clear();
  copies_.clear();
  finish(error);
  done_.store(true, std::memory_order_release);
  if (error) {
    future_->setError(error);
  } else {
    future_->markCompleted(c10::IValue(outputs_));
  }
}

}  // namespace stratacl_torch
