// ProcessGroupStrataCL's point-to-point calls. send and recv are held back by the group's
// P2PCoalescer (backend/p2p_coalescer.h) and issued with the sends and receives around them as
// one group; recvAnysource is not held: it goes through launch() on its own, as collectives do.
#include <mutex>
#include <torch/csrc/distributed/c10d/sequence_num.hpp>

#include "backend/process_group.h"
#include "backend/tensor_lists.h"
#include "backend/tensor_types.h"

namespace stratacl_torch {

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::point_to_point(c10d::OpType type,
                                                                    const at::Tensor& t, int peer) {
  const bool is_send = type == c10d::OpType::SEND;
  const char* name = is_send ? "send" : "recv";
  check_cpu_dense(t, "tensor");
  TORCH_CHECK(peer >= 0 && peer < size_, "stratacl: ", name, ": ", is_send ? "dst" : "src", " ",
              peer, " is not a rank of this group (0..", size_ - 1, ")");
  auto work = c10::make_intrusive<Work>(rank_, type, std::vector<at::Tensor>{t}, comm_);
  const at::Tensor buf = is_send ? work->input(t) : work->output(t);
  sclComm_t comm = comm_;
  P2PCoalescer::flush_all(p2p_.get());  // what other groups hold goes first
  std::lock_guard<std::mutex> lock(p2p_->issue_mutex());
  if (sequenceNum_) sequenceNum_->increment();
  p2p_->hold(work, [is_send, buf, peer, comm](sclStream_t s) {
    const Elements e = moved(buf);
    return is_send ? sclSend(e.ptr, e.count, e.type, peer, comm, s)
                   : sclRecv(e.ptr, e.count, e.type, peer, comm, s);
  });
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::send(std::vector<at::Tensor>& tensors, int dst,
                                                          int) {
  // Tags are not matched, as in ProcessGroupNCCL: messages to one peer arrive in send order.
  return point_to_point(c10d::OpType::SEND, only(tensors, "send"), dst);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::recv(std::vector<at::Tensor>& tensors, int src,
                                                          int) {
  return point_to_point(c10d::OpType::RECV, only(tensors, "recv"), src);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::recvAnysource(std::vector<at::Tensor>& tensors,
                                                                   int) {
  // Not held with the other sends and receives: a receive from any source is never grouped.
  const at::Tensor& t = only(tensors, "recv");
  at::Tensor buf;
  int* source = nullptr;
  return launch(
      c10d::OpType::RECVANYSOURCE, {t},
      [&](Work& w) {
        buf = w.output(t);
        source = w.source_slot();
      },
      [&](sclStream_t s) {
        const Elements e = moved(buf);
        return sclRecvAny(e.ptr, e.count, e.type, source, comm_, s);
      });
}

}  // namespace stratacl_torch
