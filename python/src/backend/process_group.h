// ProcessGroupStrataCL: torch.distributed's backend "stratacl" (torch 1.13: a c10d::ProcessGroup
// subclass). One StrataCL communicator per process group, its unique id passed through the c10d
// store (as ProcessGroupNCCL does), and one StrataCL stream on which every call is queued in
// issue order; each call returns a Work that the stream completes (torch/work.h).
//
// Tensors go to StrataCL as they are when contiguous: heap tensors (use_heap_allocator) are then
// read by peers in place, others are staged by the library. Non-contiguous tensors go through a
// contiguous temporary (as gloo does), filled in the call's turn on the stream and copied back
// when the call has finished. Sends and receives issued back to back go as one group
// (backend/p2p_coalescer.h), so a ring of isend and irecv cannot deadlock.
//
// Defined in process_group.cc (set-up, teardown, the collectives), process_group_alltoall.cc
// (alltoall, alltoall_base) and process_group_p2p.cc (send, recv, recvAnysource).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "backend/p2p_coalescer.h"
#include "backend/work.h"
#include "stratacl/stratacl.h"

namespace stratacl_torch {

class ProcessGroupStrataCL final : public c10d::ProcessGroup {
 public:
  ProcessGroupStrataCL(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout);
  // Waits for the calls already queued, then destroys the communicator.
  ~ProcessGroupStrataCL() override;

  const std::string getBackendName() const override { return "stratacl"; }
  sclComm_t comm() const { return comm_; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& outputSplits,
                                               std::vector<int64_t>& inputSplits,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool waitAllRanks) override;
  void setSequenceNumberForGroup() override;
  uint64_t getSequenceNumberForGroup() override;

 private:
  // Makes a Work for `outputs`, runs `issue` (which queues StrataCL calls on stream_ and returns
  // the first failure), then queues the Work's completion. Issue-time errors raise here.
  using Issue = std::function<sclResult_t(sclStream_t)>;
  c10::intrusive_ptr<Work> launch(c10d::OpType type, std::vector<at::Tensor> outputs,
                                  const std::function<void(Work&)>& prepare, const Issue& issue);
  // A send or receive of `t` with `peer`: held back and issued with the sends and receives
  // around it as one group (p2p_).
  c10::intrusive_ptr<c10d::Work> point_to_point(c10d::OpType type, const at::Tensor& t, int peer);

  sclComm_t comm_ = nullptr;
  sclStream_t stream_ = nullptr;
  std::shared_ptr<P2PCoalescer> p2p_;  // also holds the lock that orders calls on stream_
};

}  // namespace stratacl_torch
