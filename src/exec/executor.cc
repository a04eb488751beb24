#include "exec/executor.h"

#include <algorithm>

#include "exec/copy.h"

namespace stratacl {

Executor::Executor(const ExecSettings& s)
    : min_part_(s.min_part_bytes),
      model_(s.model),
      inflight_(s.spin),
      engine_(s.engines),
      team_(s.threads, s.spin) {}

int Executor::parts_for(size_t bytes) const {
  return model_.parts_for(bytes, team_.size(), min_part_);
}

Status Executor::split(size_t count, size_t elem_size, FunctionRef<Status(int, Range)> fn) {
  const int parts = parts_for(count * elem_size);
  if (parts == 1) return fn(0, Range{0, count});
  return team_.run(parts, [&](int i) { return fn(i, partition(count, elem_size, parts, i)); });
}

Status Executor::split_items(int parts, size_t count, FunctionRef<Status(int, Range)> fn) {
  parts = std::clamp(parts, 1, workers());
  if (parts == 1) return fn(0, Range{0, count});
  // Element size 64: partition's unit is then one item.
  return team_.run(parts, [&](int i) { return fn(i, partition(count, 64, parts, i)); });
}

Status Executor::split_weighted(std::span<const uint64_t> prefix,
                                FunctionRef<Status(int, Range)> fn) {
  if (prefix.empty()) return Status::Ok();
  const int parts = parts_for(size_t(prefix.back()));
  if (parts == 1) return fn(0, Range{0, prefix.size() - 1});
  return team_.run(parts, [&](int i) { return fn(i, partition_weighted(prefix, parts, i)); });
}

void Executor::copy(void* dst, const void* src, size_t bytes, bool stream) {
  if (bytes == 0 || dst == src) return;
  if (engines() > 0 && bytes >= min_part_) {
    engine_.submit(CopyDescriptor{dst, src, bytes, stream, &inflight_});
    drain();
    return;
  }
  (void)split(bytes, 1, [&](int, Range r) {
    copy_out(static_cast<char*>(dst) + r.begin, static_cast<const char*>(src) + r.begin, r.size(),
             stream);
    return Status::Ok();
  });
}

void Executor::copy_async(void* dst, const void* src, size_t bytes, bool stream) {
  if (bytes == 0 || dst == src) return;
  // Nobody waits for an engine's wake-up here: the submitter goes on with its own work.
  if (engines() == 0) {
    copy(dst, src, bytes, stream);
    return;
  }
  engine_.submit(CopyDescriptor{dst, src, bytes, stream, &inflight_});
}

}  // namespace stratacl
