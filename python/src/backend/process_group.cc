#include "backend/process_group.h"

#include <pybind11/pybind11.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>
#include <string>
#include <torch/csrc/distributed/c10d/sequence_num.hpp>

#include "backend/exit_drain.h"
#include "backend/tensor_lists.h"
#include "backend/tensor_types.h"

namespace stratacl_torch {
namespace {

constexpr const char* kUniqueIdKey = "stratacl/unique_id";

void check(sclResult_t r, sclComm_t comm, const char* call) {
  TORCH_CHECK(r == sclSuccess, "stratacl: ", call, ": ", sclGetErrorString(r), ": ",
              sclGetLastError(comm));
}

// The reduce-scatter of a contiguous input into a contiguous output, queued on `s`.
sclResult_t reduce_scatter_into(const at::Tensor& src, const at::Tensor& dst,
                                const c10d::ReduceOp& op, sclComm_t comm, sclStream_t s) {
  const Reduction out = reduced(dst, op);
  const Elements in = reduced(src, op).elements;
  return reduce_with(out, comm, [&](sclRedOp_t o) {
    return sclReduceScatter(in.ptr, out.elements.ptr, out.elements.count, out.elements.type, o,
                            comm, s);
  });
}

// The pair a *_base call takes: dense CPU tensors of one dtype, `big` n times `small`.
void check_base_pair(const at::Tensor& small, const char* small_name, const at::Tensor& big,
                     const char* big_name, int n) {
  check_cpu_dense(small, small_name);
  check_cpu_dense(big, big_name);
  TORCH_CHECK(big.scalar_type() == small.scalar_type(), "stratacl: ", big_name, " and ", small_name,
              " differ in dtype");
  TORCH_CHECK(big.numel() == small.numel() * n, "stratacl: ", big_name, " must have world_size (",
              n, ") times the elements of ", small_name, " (", small.numel() * n, "), it has ",
              big.numel());
}

}  // namespace

ProcessGroupStrataCL::ProcessGroupStrataCL(const c10::intrusive_ptr<c10d::Store>& store, int rank,
                                           int size, std::chrono::milliseconds timeout)
    : c10d::ProcessGroup(rank, size) {
  sclUniqueId id;
  if (rank == 0) {
    check(sclGetUniqueId(&id), nullptr, "sclGetUniqueId");
    store->set(kUniqueIdKey, std::vector<uint8_t>(id.internal, id.internal + sizeof id.internal));
  } else {
    const std::vector<uint8_t> bytes = store->get(kUniqueIdKey);
    TORCH_CHECK(bytes.size() == sizeof id.internal, "stratacl: the store's unique id has ",
                bytes.size(), " bytes, not ", sizeof id.internal);
    std::memcpy(id.internal, bytes.data(), bytes.size());
  }
  sclConfig_t config = SCL_CONFIG_INITIALIZER;
  if (timeout.count() > 0) config.timeoutMs = int(std::min<int64_t>(timeout.count(), INT_MAX));
  config.commName = "torch.distributed";
  check(sclCommInitRankConfig(&comm_, size, id, rank, &config), nullptr, "sclCommInitRankConfig");
  const sclResult_t r = sclStreamCreate(&stream_);
  if (r != sclSuccess) {
    sclCommDestroy(comm_);
    check(r, nullptr, "sclStreamCreate");
  }
  p2p_ = std::make_shared<P2PCoalescer>(stream_);
  init();
  exit_drain::add(stream_, comm_);
}

ProcessGroupStrataCL::~ProcessGroupStrataCL() {
  // Queued calls finish (or fail) first; their Works hold the tensors until then. When Python
  // drops the last reference, this runs holding the GIL, and a completion that frees the last
  // reference to a tensor Python made needs the GIL: waiting for the stream with it would
  // deadlock, so it is released for the wait.
  std::optional<pybind11::gil_scoped_release> no_gil;
  if (PyGILState_Check()) no_gil.emplace();
  p2p_->flush();
  p2p_->close();
  exit_drain::remove(stream_);
  sclStreamDestroy(stream_);
  if (exit_drain::revoked_at_exit()) {
    sclCommAbort(comm_);  // the program failed: its peers may never destroy theirs
  } else {
    sclCommDestroy(comm_);
  }
}

c10::intrusive_ptr<Work> ProcessGroupStrataCL::launch(c10d::OpType type,
                                                      std::vector<at::Tensor> outputs,
                                                      const std::function<void(Work&)>& prepare,
                                                      const Issue& issue) {
  auto work = c10::make_intrusive<Work>(rank_, type, std::move(outputs), comm_);
  prepare(*work);
  P2PCoalescer::flush_all();  // sends and receives issued before it, on any group, go first
  std::lock_guard<std::mutex> lock(p2p_->issue_mutex());
  p2p_->flush_locked();  // and any another thread held on this group meanwhile
  if (sequenceNum_) sequenceNum_->increment();
  work->stage_in_after(stream_);
  const sclResult_t r = issue(stream_);
  // Calls queued before a failure still run: the Work holds their tensors until they finish.
  work->complete_after(stream_);
  check(r, comm_, c10d::opTypeToString(type).c_str());
  return work;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::broadcast(std::vector<at::Tensor>& tensors,
                                                               const c10d::BroadcastOptions& opts) {
  const at::Tensor& t = only(tensors, "broadcast");
  at::Tensor buf;
  return launch(
      c10d::OpType::BROADCAST, {t}, [&](Work& w) { buf = w.output(t); },
      [&](sclStream_t s) {
        const Elements e = moved(buf);
        return sclBroadcast(e.ptr, e.ptr, e.count, e.type, int(opts.rootRank), comm_, s);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::allreduce(std::vector<at::Tensor>& tensors,
                                                               const c10d::AllreduceOptions& opts) {
  const at::Tensor& t = only(tensors, "allreduce");
  reduced(t, opts.reduceOp);  // raises before anything is queued
  at::Tensor buf;
  return launch(
      c10d::OpType::ALLREDUCE, {t}, [&](Work& w) { buf = w.output(t); },
      [&](sclStream_t s) {
        const Reduction r = reduced(buf, opts.reduceOp);
        const Elements& e = r.elements;
        return reduce_with(r, comm_, [&](sclRedOp_t o) {
          return sclAllReduce(e.ptr, e.ptr, e.count, e.type, o, comm_, s);
        });
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "stratacl: allreduce_coalesced needs at least one tensor");
  for (const at::Tensor& t : tensors) {
    check_cpu_dense(t, "tensors");
    reduced(t, opts.reduceOp);
  }
  // One allreduce per tensor, all queued at once, one completion: no flattening copy.
  std::vector<at::Tensor> bufs;
  return launch(
      c10d::OpType::ALLREDUCE_COALESCED, tensors,
      [&](Work& w) {
        for (const at::Tensor& t : tensors) bufs.push_back(w.output(t));
      },
      [&](sclStream_t s) {
        for (const at::Tensor& b : bufs) {
          const Reduction r = reduced(b, opts.reduceOp);
          const Elements& e = r.elements;
          const sclResult_t res = reduce_with(r, comm_, [&](sclRedOp_t o) {
            return sclAllReduce(e.ptr, e.ptr, e.count, e.type, o, comm_, s);
          });
          if (res != sclSuccess) return res;
        }
        return sclSuccess;
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::reduce(std::vector<at::Tensor>& tensors,
                                                            const c10d::ReduceOptions& opts) {
  const at::Tensor& t = only(tensors, "reduce");
  reduced(t, opts.reduceOp);
  at::Tensor buf;
  return launch(
      c10d::OpType::REDUCE, {t}, [&](Work& w) { buf = w.output(t); },
      [&](sclStream_t s) {
        const Reduction r = reduced(buf, opts.reduceOp);
        const Elements& e = r.elements;
        return reduce_with(r, comm_, [&](sclRedOp_t o) {
          return sclReduce(e.ptr, e.ptr, e.count, e.type, o, int(opts.rootRank), comm_, s);
        });
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::allgather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  const at::Tensor& in = only(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1, "stratacl: allgather takes one output list per process");
  check_list(outputs[0], in, size_t(size_), "output_tensor_list");
  at::Tensor src, dst;
  return launch(
      c10d::OpType::ALLGATHER, outputs[0],
      [&](Work& w) {
        src = w.input(in);
        dst = gathered_output(w, outputs[0]);
      },
      [&](sclStream_t s) {
        const Elements e = moved(src), o = moved(dst);
        return sclAllGather(e.ptr, o.ptr, e.count, e.type, comm_, s);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::_allgather_base(
    at::Tensor& output, at::Tensor& input, const c10d::AllgatherOptions&) {
  check_base_pair(input, "input_tensor", output, "output_tensor", size_);
  at::Tensor src, dst;
  return launch(
      c10d::OpType::_ALLGATHER_BASE, {output},
      [&](Work& w) {
        src = w.input(input);
        dst = w.output(output);
      },
      [&](sclStream_t s) {
        const Elements e = moved(src), o = moved(dst);
        return sclAllGather(e.ptr, o.ptr, e.count, e.type, comm_, s);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions&) {
  TORCH_CHECK(outputs.size() == size_t(size_), "stratacl: allgather_coalesced needs ", size_,
              " output lists, got ", outputs.size());
  for (const auto& list : outputs) {
    TORCH_CHECK(list.size() == inputs.size(),
                "stratacl: every output list of "
                "allgather_coalesced must hold one tensor per input");
  }
  // Input j gathers into outputs[0..n-1][j]: one allgather per input, one completion.
  std::vector<at::Tensor> srcs, dsts, all;
  for (const auto& list : outputs) all.insert(all.end(), list.begin(), list.end());
  return launch(
      c10d::OpType::ALLGATHER_COALESCED, all,
      [&](Work& w) {
        for (size_t j = 0; j < inputs.size(); ++j) {
          check_cpu_dense(inputs[j], "input_tensor_list");
          std::vector<at::Tensor> column;
          for (const auto& list : outputs) column.push_back(list[j]);
          check_list(column, inputs[j], size_t(size_), "output_tensor_lists");
          srcs.push_back(w.input(inputs[j]));
          dsts.push_back(gathered_output(w, column));
        }
      },
      [&](sclStream_t s) {
        for (size_t j = 0; j < srcs.size(); ++j) {
          const Elements e = moved(srcs[j]), o = moved(dsts[j]);
          const sclResult_t r = sclAllGather(e.ptr, o.ptr, e.count, e.type, comm_, s);
          if (r != sclSuccess) return r;
        }
        return sclSuccess;
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::gather(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::GatherOptions& opts) {
  const at::Tensor& in = only(inputs, "gather");
  const bool root = opts.rootRank == rank_;
  check_rooted_lists(outputs, in, root, size_, "gather_list");
  at::Tensor src, dst;
  return launch(
      c10d::OpType::GATHER, root ? outputs[0] : std::vector<at::Tensor>{},
      [&](Work& w) {
        src = w.input(in);
        if (root) dst = gathered_output(w, outputs[0]);
      },
      [&](sclStream_t s) {
        const Elements e = moved(src);
        void* out = root ? dst.data_ptr() : nullptr;
        return sclGather(e.ptr, out, e.count, e.type, int(opts.rootRank), comm_, s);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ScatterOptions& opts) {
  const at::Tensor& out = only(outputs, "scatter");
  const bool root = opts.rootRank == rank_;
  check_rooted_lists(inputs, out, root, size_, "scatter_list");
  at::Tensor src, dst;
  return launch(
      c10d::OpType::SCATTER, {out},
      [&](Work& w) {
        if (root) src = gathered_input(w, inputs[0]);
        dst = w.output(out);
      },
      [&](sclStream_t s) {
        const Elements o = moved(dst);
        const void* in = root ? src.data_ptr() : nullptr;
        return sclScatter(in, o.ptr, o.count, o.type, int(opts.rootRank), comm_, s);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::reduce_scatter(
    std::vector<at::Tensor>& outputs, std::vector<std::vector<at::Tensor>>& inputs,
    const c10d::ReduceScatterOptions& opts) {
  const at::Tensor& out = only(outputs, "reduce_scatter");
  TORCH_CHECK(inputs.size() == 1, "stratacl: reduce_scatter takes one input list per process");
  check_list(inputs[0], out, size_t(size_), "input_list");
  reduced(out, opts.reduceOp);
  at::Tensor src, dst;
  return launch(
      c10d::OpType::REDUCE_SCATTER, {out},
      [&](Work& w) {
        src = gathered_input(w, inputs[0]);
        dst = w.output(out);
      },
      [&](sclStream_t s) { return reduce_scatter_into(src, dst, opts.reduceOp, comm_, s); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::_reduce_scatter_base(
    at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) {
  check_base_pair(output, "output", input, "input", size_);
  reduced(output, opts.reduceOp);
  at::Tensor src, dst;
  return launch(
      c10d::OpType::_REDUCE_SCATTER_BASE, {output},
      [&](Work& w) {
        src = w.input(input);
        dst = w.output(output);
      },
      [&](sclStream_t s) { return reduce_scatter_into(src, dst, opts.reduceOp, comm_, s); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::barrier(const c10d::BarrierOptions&) {
  return launch(
      c10d::OpType::BARRIER, {}, [](Work&) {}, [&](sclStream_t s) { return sclBarrier(comm_, s); });
}

void ProcessGroupStrataCL::monitoredBarrier(const c10d::BarrierOptions& opts, bool) {
  // StrataCL's barrier already names the rank that did not arrive within the communicator's
  // timeout; a shorter timeout in opts is honoured by waiting no longer than it.
  auto work = barrier(opts);
  work->wait(opts.timeout.count() > 0 ? opts.timeout : kNoTimeout);
}

void ProcessGroupStrataCL::setSequenceNumberForGroup() {
  // Every rank starts at 0 and counts the calls it issues: equal on every rank while the ranks
  // issue the same calls, which is what the number is for.
  std::lock_guard<std::mutex> lock(p2p_->issue_mutex());
  if (!sequenceNum_) sequenceNum_ = c10d::SequenceNum(0);
}

uint64_t ProcessGroupStrataCL::getSequenceNumberForGroup() {
  std::lock_guard<std::mutex> lock(p2p_->issue_mutex());
  TORCH_CHECK(sequenceNum_ && sequenceNum_->isSet(),
              "stratacl: the sequence number was never set (setSequenceNumberForGroup)");
  return sequenceNum_->get();
}

}  // namespace stratacl_torch
