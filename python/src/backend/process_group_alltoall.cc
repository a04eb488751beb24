// ProcessGroupStrataCL's all-to-all exchanges: alltoall_base (one tensor each way, blocks of
// rows of dim 0: sclAlltoAll for even splits, sclAlltoAllv otherwise) and alltoall (a list of
// tensors each way: one group of sends and receives).
#include <vector>

#include "backend/process_group.h"
#include "backend/tensor_types.h"

namespace stratacl_torch {

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::alltoall_base(
    at::Tensor& output, at::Tensor& input, std::vector<int64_t>& outputSplits,
    std::vector<int64_t>& inputSplits, const c10d::AllToAllOptions&) {
  check_cpu_dense(input, "input");
  check_cpu_dense(output, "output");
  TORCH_CHECK(output.scalar_type() == input.scalar_type(),
              "stratacl: output and input tensors differ in dtype");
  // Splits count rows of dim 0 (a 0-d tensor is one row); StrataCL counts elements of the moved
  // type. Both tensors' rows must hold the same elements, and both tensors must add up to their
  // splits, so no block can be larger than the tensor it is written into.
  const auto row_elements = [](const at::Tensor& t) {
    int64_t n = 1;
    for (int64_t d = 1; d < t.dim(); ++d) n *= t.size(d);
    return n;
  };
  TORCH_CHECK(row_elements(input) == row_elements(output), "stratacl: a row of output (dim 0) has ",
              row_elements(output), " elements, a row of input ", row_elements(input));
  const size_t per_row = size_t(row_elements(input)) * moved_per_element(input);
  const auto counts = [&](const at::Tensor& t, const std::vector<int64_t>& splits, const char* name,
                          std::vector<size_t>& count, std::vector<size_t>& at) {
    const int64_t rows = t.dim() ? t.size(0) : 1;
    if (splits.empty()) {
      TORCH_CHECK(rows % size_ == 0, "stratacl: ", name, " has ", rows, " rows, which world_size ",
                  size_, " does not divide (give split sizes)");
    } else {
      TORCH_CHECK(splits.size() == size_t(size_), "stratacl: ", name, " split sizes need ", size_,
                  " entries, got ", splits.size());
    }
    int64_t sum = 0;
    for (int p = 0; p < size_; ++p) {
      const int64_t r = splits.empty() ? rows / size_ : splits[size_t(p)];
      TORCH_CHECK(r >= 0 && r <= rows, "stratacl: ", name, " split size ", p, " is ", r,
                  ", outside 0..", rows);
      at.push_back(size_t(sum) * per_row);
      count.push_back(size_t(r) * per_row);
      sum += r;
    }
    TORCH_CHECK(sum == rows, "stratacl: ", name, " split sizes add up to ", sum, ", not to its ",
                rows, " rows");
  };
  std::vector<size_t> scount, sdispl, rcount, rdispl;
  counts(input, inputSplits, "input", scount, sdispl);
  counts(output, outputSplits, "output", rcount, rdispl);
  // Even splits on both sides is an alltoall: then both tensors must be the same size (gloo
  // checks the same), or each block read would not fit the block written.
  const bool even = inputSplits.empty() && outputSplits.empty();
  TORCH_CHECK(!even || input.numel() == output.numel(), "stratacl: output has ", output.numel(),
              " elements and input ", input.numel(),
              "; without split sizes they must be the same size");
  at::Tensor src, dst;
  return launch(
      c10d::OpType::ALLTOALL_BASE, {output},
      [&](Work& w) {
        src = w.input(input);
        dst = w.output(output);
      },
      [&](sclStream_t s) {
        const Elements e = moved(src), o = moved(dst);
        if (even) return sclAlltoAll(e.ptr, o.ptr, e.count / size_t(size_), e.type, comm_, s);
        return sclAlltoAllv(e.ptr, scount.data(), sdispl.data(), o.ptr, rcount.data(),
                            rdispl.data(), e.type, comm_, s);
      });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupStrataCL::alltoall(std::vector<at::Tensor>& outputs,
                                                              std::vector<at::Tensor>& inputs,
                                                              const c10d::AllToAllOptions&) {
  TORCH_CHECK(outputs.size() == size_t(size_) && inputs.size() == size_t(size_),
              "stratacl: alltoall needs ", size_, " input and output tensors");
  for (int p = 0; p < size_; ++p) {
    check_cpu_dense(inputs[size_t(p)], "input_tensor_list");
    check_cpu_dense(outputs[size_t(p)], "output_tensor_list");
    TORCH_CHECK(inputs[size_t(p)].scalar_type() == inputs[0].scalar_type() &&
                    outputs[size_t(p)].scalar_type() == inputs[0].scalar_type(),
                "stratacl: alltoall's tensors must share one dtype");
  }
  // Sizes between ranks are checked by the sends and receives; this rank's own block is a copy.
  const size_t me = size_t(rank_);
  TORCH_CHECK(inputs[me].numel() == outputs[me].numel(), "stratacl: output_tensor_list[", rank_,
              "] has ", outputs[me].numel(), " elements and input_tensor_list[", rank_, "] ",
              inputs[me].numel(), "; this rank's own block must match");
  // Each block goes straight from its tensor to its peer's (a group of sends and receives, so
  // any sizes and any placement), and this rank's own block is copied once the group is done.
  std::vector<at::Tensor> src, dst;
  return launch(
      c10d::OpType::ALLTOALL, outputs,
      [&](Work& w) {
        for (int p = 0; p < size_; ++p) {
          src.push_back(w.input(inputs[size_t(p)]));
          dst.push_back(w.output(outputs[size_t(p)]));
        }
        w.copy_back(outputs[me], src[me].view(outputs[me].sizes()));  // numel checked
      },
      [&](sclStream_t s) {
        sclResult_t r = sclGroupStart();
        for (int p = 0; p < size_ && r == sclSuccess; ++p) {
          if (p == rank_) continue;
          const Elements e = moved(src[size_t(p)]), o = moved(dst[size_t(p)]);
          r = sclSend(e.ptr, e.count, e.type, p, comm_, s);
          if (r == sclSuccess) r = sclRecv(o.ptr, o.count, o.type, p, comm_, s);
        }
        const sclResult_t end = sclGroupEnd();
        return r != sclSuccess ? r : end;
      });
}

}  // namespace stratacl_torch
