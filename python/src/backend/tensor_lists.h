// The tensor lists c10d calls take (allgather's outputs, scatter's inputs, ...): their checks,
// and their memory as one contiguous tensor, in place when the list is views of one tensor.
#pragma once

#include <ATen/ATen.h>

#include <vector>

#include "backend/work.h"

namespace stratacl_torch {

// The tensor of a single-tensor call (broadcast, send, ...): c10d passes a list with one tensor
// per device the process drives, and a StrataCL rank drives one. Checks there is exactly one,
// dense and on the CPU; `call` names the call in the error.
const at::Tensor& only(const std::vector<at::Tensor>& tensors, const char* call);
// Every tensor of `list` dense, on the CPU and like `like` (dtype, element count); n of them.
void check_list(const std::vector<at::Tensor>& list, const at::Tensor& like, size_t n,
                const char* name);
// Gather's outputs and scatter's inputs: one list of n tensors like `like` at the root, none
// elsewhere.
void check_rooted_lists(const std::vector<std::vector<at::Tensor>>& lists, const at::Tensor& like,
                        bool root, int n, const char* name);
// True when the list is one contiguous run of one tensor's memory, view after view.
bool one_run(const std::vector<at::Tensor>& list);
// The list as one contiguous tensor the calls write (copied out into the list on success when
// it is not one run), or read (a copy when it is not one run). `w` keeps what they use alive.
at::Tensor gathered_output(Work& w, const std::vector<at::Tensor>& list);
at::Tensor gathered_input(Work& w, const std::vector<at::Tensor>& list);

}  // namespace stratacl_torch
