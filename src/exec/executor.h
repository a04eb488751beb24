// A rank's execution resources for its communicator's calls: the worker team, the copy engine,
// and the cost model that decides how many workers a job gets. Algorithms hand it work in two
// shapes: a range of elements cut by bytes (partition), or a list of uneven items cut by weight
// (partition_weighted); pure moves go to the engines when there are any. The communicator's calls
// run one at a time, so one executor serves them all.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/status.h"
#include "exec/copy_engine.h"
#include "exec/cost_model.h"
#include "exec/function_ref.h"
#include "exec/partition.h"
#include "exec/team.h"

namespace stratacl {

struct ExecSettings {
  int threads = 1;  // worker team size, the caller included (resolved: never 0)
  int engines = 0;  // copy-engine threads
  CostModel model;
  size_t min_part_bytes = 0;  // the least a part carries: model.min_part_bytes() unless pinned
  SpinPolicy spin;
};

class Executor {
 public:
  explicit Executor(const ExecSettings& s);
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  int workers() const { return team_.size(); }
  int engines() const { return engine_.engines(); }
  size_t min_part_bytes() const { return min_part_; }
  // Parts for a job of `bytes` (the cost model); fn's `part` argument is below workers().
  int parts_for(size_t bytes) const;

  // fn(part, range) over [0, count) elements of `elem_size` bytes, cut by bytes.
  Status split(size_t count, size_t elem_size, FunctionRef<Status(int, Range)> fn);
  // fn(part, items) over `count` items of equal weight, in `parts` parts (pinned by the caller).
  Status split_items(int parts, size_t count, FunctionRef<Status(int, Range)> fn);
  // fn(part, items) over a weighted item list (see partition_weighted), weights in bytes.
  Status split_weighted(std::span<const uint64_t> prefix, FunctionRef<Status(int, Range)> fn);

  // A pure move, finished on return: on the engines when there are any, else cut over workers.
  void copy(void* dst, const void* src, size_t bytes, bool stream);
  // A pure move that may still be in flight on return (done at once, as copy() does, without
  // engines). It lands before drain() returns; the caller keeps both buffers alive until then.
  void copy_async(void* dst, const void* src, size_t bytes, bool stream);
  void drain() { inflight_.wait(); }

 private:
  size_t min_part_;
  CostModel model_;
  Completion inflight_;  // before engine_: outlives its threads
  CopyEngine engine_;
  Team team_;
};

// Drains the executor when it goes out of scope: every path out of a call that used copy_async,
// error returns included, waits for its moves (they write the caller's buffers).
class DrainOnExit {
 public:
  explicit DrainOnExit(Executor& e) : e_(e) {}
  ~DrainOnExit() { e_.drain(); }
  DrainOnExit(const DrainOnExit&) = delete;
  DrainOnExit& operator=(const DrainOnExit&) = delete;

 private:
  Executor& e_;
};

}  // namespace stratacl
