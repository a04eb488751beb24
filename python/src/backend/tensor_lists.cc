#include "backend/tensor_lists.h"

#include <utility>

#include "backend/tensor_types.h"

namespace stratacl_torch {

const at::Tensor& only(const std::vector<at::Tensor>& tensors, const char* call) {
  TORCH_CHECK(tensors.size() == 1, "stratacl: ", call, " takes one tensor per process, got ",
              tensors.size());
  check_cpu_dense(tensors[0], "tensor");
  return tensors[0];
}

// Every tensor of a list like `like` (same dtype and element count), as collectives need.
void check_list(const std::vector<at::Tensor>& list, const at::Tensor& like, size_t n,
                const char* name) {
  TORCH_CHECK(list.size() == n, "stratacl: ", name, " must hold ", n, " tensors, got ",
              list.size());
  for (const at::Tensor& t : list) {
    check_cpu_dense(t, name);
    TORCH_CHECK(t.scalar_type() == like.scalar_type(), "stratacl: ", name, " holds a ",
                t.scalar_type(), " tensor; the input is ", like.scalar_type());
    TORCH_CHECK(t.numel() == like.numel(), "stratacl: ", name, " holds a tensor of ", t.numel(),
                " elements; the input has ", like.numel());
  }
}

// Gather's outputs and scatter's inputs: one list of n tensors like `like` at the root, none
// elsewhere.
void check_rooted_lists(const std::vector<std::vector<at::Tensor>>& lists, const at::Tensor& like,
                        bool root, int n, const char* name) {
  if (root) {
    TORCH_CHECK(lists.size() == 1, "stratacl: the root takes one ", name);
    check_list(lists[0], like, size_t(n), name);
  } else {
    TORCH_CHECK(lists.empty(), "stratacl: ranks other than the root take no ", name);
  }
}

// True when the list is one contiguous run of one tensor's memory, view after view (what
// torch.chunk or split make): then collectives read or write it in place. Separate tensors that
// merely sit next to each other do not count: they are separate allocations.
bool one_run(const std::vector<at::Tensor>& list) {
  if (list.empty()) return false;
  const char* next = static_cast<const char*>(list[0].data_ptr());
  for (const at::Tensor& t : list) {
    if (!t.is_contiguous() || !t.is_alias_of(list[0]) ||
        static_cast<const char*>(t.data_ptr()) != next)
      return false;
    next += t.nbytes();
  }
  return true;
}

namespace {

// The list's memory as one flat tensor (the list must be one run).
at::Tensor run_view(const std::vector<at::Tensor>& list) {
  return at::from_blob(list[0].data_ptr(), {int64_t(list.size()) * list[0].numel()},
                       list[0].options());
}

}  // namespace

namespace {

// A contiguous temporary that holds the list's tensors one after another, and a view of it
// shaped like each of them.
std::pair<at::Tensor, std::vector<at::Tensor>> flat_pieces(const std::vector<at::Tensor>& list) {
  const int64_t each = list[0].numel();
  at::Tensor flat = at::empty({int64_t(list.size()) * each}, list[0].options());
  std::vector<at::Tensor> pieces;
  for (size_t i = 0; i < list.size(); ++i)
    pieces.push_back(flat.narrow(0, int64_t(i) * each, each).view(list[i].sizes()));
  return {flat, pieces};
}

}  // namespace

// A list as one contiguous tensor the calls write: the list's own memory when it is one run,
// else a temporary copied out into the list when the calls have succeeded.
at::Tensor gathered_output(Work& w, const std::vector<at::Tensor>& list) {
  for (const at::Tensor& t : list) w.keep(t);
  if (one_run(list)) return run_view(list);
  auto [flat, pieces] = flat_pieces(list);
  for (size_t i = 0; i < list.size(); ++i) w.copy_back(list[i], pieces[i]);
  w.keep(flat);
  return flat;
}

// A list as one contiguous tensor the calls read: the list's own memory, or a temporary filled
// from it in the Work's turn (after the calls queued before it have written the list).
at::Tensor gathered_input(Work& w, const std::vector<at::Tensor>& list) {
  for (const at::Tensor& t : list) w.keep(t);
  if (one_run(list)) return run_view(list);
  auto [flat, pieces] = flat_pieces(list);
  for (size_t i = 0; i < list.size(); ++i) w.copy_in(pieces[i], list[i]);
  w.keep(flat);
  return flat;
}

}  // namespace stratacl_torch
