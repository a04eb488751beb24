#include "bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "check.h"
#include "datatypes.h"
#include "errors.h"

namespace stratacl::bench {
namespace {

constexpr size_t kAlignment = 64;
constexpr size_t kLargestElement = 8;  // bytes, of int64, uint64 and double

// Largest buffer any row needs: every collective's send and recv fit in its row's byte size,
// and -u moves the buffers' start by up to that many of the largest elements.
size_t buffer_size(const std::vector<size_t>& sizes, int unalign) {
  return std::max(*std::max_element(sizes.begin(), sizes.end()), kAlignment) +
         static_cast<size_t>(unalign) * kLargestElement;
}

// Doubles of the statistics buffer: a time per repeat, or with -I one per iteration.
size_t stats_slots(const Options& options) {
  const size_t repeats = static_cast<size_t>(options.repeats);
  const size_t iterations = options.per_iter ? repeats * static_cast<size_t>(options.iters) : 0;
  return std::max(repeats + 1, iterations);
}

// The index of the 99th percentile (nearest rank) among n sorted values: the smallest value
// that at least 99% of them do not exceed (with fewer than 100 values, the largest).
size_t nearest_rank_99(size_t n) { return std::min((99 * n + 99) / 100, n) - 1; }

}  // namespace

Buffer::Buffer(size_t bytes, MemKind kind) : bytes_(bytes), kind_(kind) {
  if (kind == MemKind::kHeap) {
    require(sclMemAlloc(&ptr_, bytes), "sclMemAlloc");
    return;
  }
  // Rounded up to the alignment, which aligned allocation needs on some libcs.
  if (int rc =
          posix_memalign(&ptr_, kAlignment, (bytes + kAlignment - 1) / kAlignment * kAlignment);
      rc != 0) {
    ptr_ = nullptr;
    throw LibraryError(sclSystemError, "posix_memalign", std::strerror(rc));
  }
}

double Buffer::register_on(sclComm_t comm) {
  const auto start = std::chrono::steady_clock::now();
  require(sclCommRegister(comm, ptr_, bytes_, &reg_handle_), "sclCommRegister");
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  reg_comm_ = comm;
  return took.count();
}

Buffer::~Buffer() {
  if (reg_handle_ != nullptr) sclCommDeregister(reg_comm_, reg_handle_);
  if (ptr_ == nullptr) return;
  if (kind_ == MemKind::kHeap) {
    sclMemFree(ptr_);  // nothing useful to do about a failure while tearing down
  } else {
    std::free(ptr_);
  }
}

Bench::Bench(const Options& options, sclComm_t comm, int nranks, int rank, int version)
    : options_(options),
      comm_(comm),
      nranks_(nranks),
      rank_(rank),
      version_(version),
      sizes_(size_steps(options)),
      buffer_size_(buffer_size(sizes_, options.unalign)),
      send_(buffer_size_, options.mem),
      recv_(buffer_size_, options.mem),
      stats_(stats_slots(options) * sizeof(double), MemKind::kHeap),
      stats_slots_(stats_slots(options)) {
  std::memset(send_.data(), 0, buffer_size_);
  std::memset(recv_.data(), 0, buffer_size_);
  if (effective_mode(options) == Mode::kCma) measure_registration();
}

// Registers both buffers (new ranges), then times registering the send buffer's range again and
// again (cache hits: a reference each) and dropping those references.
void Bench::measure_registration() {
  constexpr int kCached = 1000;
  registration_.buffers = 2;
  registration_.bytes = buffer_size_;
  registration_.first_us = (send_.register_on(comm_) + recv_.register_on(comm_)) / 2 * 1e6;
  std::vector<void*> handles(kCached);
  auto start = std::chrono::steady_clock::now();
  for (void*& h : handles)
    require(sclCommRegister(comm_, send_.data(), registration_.bytes, &h), "sclCommRegister");
  auto mid = std::chrono::steady_clock::now();
  for (void* h : handles) require(sclCommDeregister(comm_, h), "sclCommDeregister");
  auto end = std::chrono::steady_clock::now();
  registration_.cached_us =
      std::chrono::duration<double, std::micro>(mid - start).count() / kCached;
  registration_.release_us = std::chrono::duration<double, std::micro>(end - mid).count() / kCached;
}

void Bench::run(const Collective& collective, Report& report) {
  if (collective.needs_power_of_two && (nranks_ & (nranks_ - 1)) != 0) {
    // As nccl-tests does: nothing to measure, and not a failure.
    report.print_note(std::string(collective.name) + ": " + std::to_string(nranks_) +
                      " ranks is not a power of 2, skipping");
    return;
  }
  report.begin_table({collective.name, nranks_, mem_kind_name(options_.mem),
                      mode_name(effective_mode(options_)), options_.iters, options_.warmup,
                      options_.check_iters, options_.repeats, version_});
  // Operations only matter to reductions; the others run once per type under a dummy op.
  const std::vector<sclRedOp_t> ops =
      collective.reduces ? options_.ops : std::vector<sclRedOp_t>{sclSum};

  for (sclDataType_t type : options_.types) {
    const size_t elem_size = dtype_size(type);
    std::vector<size_t> counts;
    for (size_t bytes : sizes_) {
      if (size_t count = element_count(collective, bytes, elem_size, nranks_); count > 0) {
        counts.push_back(count);
      }
    }
    // Sizes too small for the type and rank count give no rows; keep one, of zero elements,
    // so every type still shows up (and the library's empty call is exercised).
    if (counts.empty()) counts.push_back(0);

    for (sclRedOp_t op : ops) {
      // -N: passes over the sizes, every row printed; 0 passes on until the job is killed.
      for (int cycle = 0; options_.cycles == 0 || cycle < options_.cycles; ++cycle) {
        for (size_t count : counts) {
          Row row{};
          row.bytes = count * elem_size;
          row.count = count;
          row.type = type;
          if (collective.reduces) row.op = op;
          row.root = collective.rooted ? options_.root : -1;
          row.alg_factor = collective.alg_factor ? collective.alg_factor(nranks_) : 1.0;
          row.bus_factor = collective.bus_factor(nranks_);
          row.cycle = cycle;
          row.out_of_place = measure(collective, type, op, count, /*in_place=*/false);
          if (collective.has_in_place) {
            row.in_place = measure(collective, type, op, count, /*in_place=*/true);
          }
          report.add_row(row);
        }
      }
    }
  }
  report.end_table();
}

Measurement Bench::measure(const Collective& collective, sclDataType_t type, sclRedOp_t op,
                           size_t count, bool in_place) {
  const Placement placement{count, nranks_, rank_, options_.root};
  const Geometry geometry = collective.geometry(placement);
  const size_t elem_size = dtype_size(type);
  // -u: both buffers start that many elements past their alignment.
  char* const send = send_.data() + static_cast<size_t>(options_.unalign) * elem_size;
  char* const recv = recv_.data() + static_cast<size_t>(options_.unalign) * elem_size;

  LaunchArgs args{send, recv, placement, type, op, comm_};
  void* input = send;
  if (in_place) {
    char* input_at = recv + geometry.in_place_input * elem_size;
    args.send = input_at;
    args.recv = recv + geometry.in_place_output * elem_size;
    input = input_at;
  }

  Measurement m;
  m.measured = true;
  if (options_.check_iters > 0) {
    // Each checked call starts from fresh inputs; the first one with a wrong value ends it.
    const ValueScheme scheme = scheme_for(collective, op);
    uint64_t wrong = 0;
    for (int c = 0; c < options_.check_iters && wrong == 0; ++c) {
      // The sentinel goes first: in place, the input may lie inside the output.
      fill_sentinel(args.recv, geometry.output_elems, type);
      fill_input(input, geometry.input_elems, type, scheme, nranks_, rank_);
      launch(collective, args);
      wrong = sum_over_ranks(
          count_wrong(args.recv, geometry.output_elems, type, op, scheme, collective, placement));
    }
    m.wrong = wrong;
  }

  for (int i = 0; i < options_.warmup; ++i) launch(collective, args);

  using Clock = std::chrono::steady_clock;
  using Micros = std::chrono::duration<double, std::micro>;
  const int calls = options_.agg_iters;
  const bool barrier_each = options_.blocking == Blocking::kBarrierEach;
  const bool barrier_outer = options_.blocking == Blocking::kBarrierOuter;
  // Reading the clock around every iteration only when something needs it.
  const bool clock_each = options_.per_iter || barrier_outer;
  std::vector<double> local_us;      // per repeat, the time per call
  std::vector<double> iteration_us;  // -I: per iteration of every repeat, the time per call
  for (int repeat = 0; repeat < options_.repeats; ++repeat) {
    // Lined up by the barrier, the ranks start together.
    require(sclBarrier(comm_, nullptr), "sclBarrier");
    double outer_us = 0;  // -z 3: the iterations' time without the barriers between them
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < options_.iters; ++i) {
      const Clock::time_point iteration_start = clock_each ? Clock::now() : start;
      for (int c = 0; c < calls; ++c) {
        launch(collective, args);
        if (barrier_each) require(sclBarrier(comm_, nullptr), "sclBarrier");
      }
      if (clock_each) {
        const double us = Micros(Clock::now() - iteration_start).count();
        if (options_.per_iter) iteration_us.push_back(us / calls);
        outer_us += us;
        if (barrier_outer) require(sclBarrier(comm_, nullptr), "sclBarrier");
      }
    }
    const double elapsed_us = barrier_outer ? outer_us : Micros(Clock::now() - start).count();
    local_us.push_back(elapsed_us / (static_cast<double>(options_.iters) * calls));
  }
  const Percentiles times = percentiles(over_ranks(local_us, options_.average));
  m.time_us = times.median;
  m.p99_us = times.p99;
  if (options_.per_iter) m.iterations = iteration_stats(iteration_us);
  return m;
}

void Bench::launch(const Collective& collective, const LaunchArgs& args) {
  const LaunchResult result = collective.launch(args);
  require(result.result, result.call);
}

uint64_t Bench::sum_over_ranks(uint64_t local) {
  auto* slot = reinterpret_cast<uint64_t*>(stats_.data());
  *slot = local;
  require(sclAllReduce(slot, slot, 1, sclUint64, sclSum, comm_, nullptr), "sclAllReduce");
  return *slot;
}

std::vector<double> Bench::over_ranks(const std::vector<double>& values, Average average) {
  auto* slots = reinterpret_cast<double*>(stats_.data());
  const size_t n = std::min(values.size(), stats_slots_);
  std::copy(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(n), slots);
  if (average == Average::kRank0) {
    require(sclBroadcast(slots, slots, n, sclFloat64, 0, comm_, nullptr), "sclBroadcast");
  } else {
    const sclRedOp_t op = average == Average::kMin   ? sclMin
                          : average == Average::kMax ? sclMax
                                                     : sclSum;
    require(sclAllReduce(slots, slots, n, sclFloat64, op, comm_, nullptr), "sclAllReduce");
  }
  std::vector<double> combined(slots, slots + n);
  if (average == Average::kMean) {
    for (double& v : combined) v /= nranks_;
  }
  return combined;
}

Bench::Percentiles Bench::percentiles(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  const size_t n = times.size();
  const size_t mid = n / 2;
  Percentiles result;
  result.median = n % 2 == 1 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
  result.p99 = times[nearest_rank_99(n)];
  return result;
}

IterationStats Bench::iteration_stats(const std::vector<double>& local_us) {
  // Per iteration the slowest rank, as nccl-tests takes the slowest process.
  const std::vector<double> slowest = over_ranks(local_us, Average::kMax);
  std::vector<double> kept;
  const size_t iters = static_cast<size_t>(options_.iters);
  for (size_t i = 0; i < slowest.size(); ++i) {
    if (i % iters >= static_cast<size_t>(options_.per_iter_skip)) kept.push_back(slowest[i]);
  }
  std::sort(kept.begin(), kept.end());
  IterationStats stats;
  const size_t n = kept.size();
  stats.samples = static_cast<int>(n);
  if (n == 0) return stats;
  stats.min_us = kept.front();
  stats.max_us = kept.back();
  stats.p50_us = kept[n / 2];
  stats.p99_us = kept[nearest_rank_99(n)];
  double sum = 0;
  for (double v : kept) sum += v;
  stats.mean_us = sum / static_cast<double>(n);
  double squares = 0;
  for (double v : kept) squares += (v - stats.mean_us) * (v - stats.mean_us);
  const double stdev = std::sqrt(squares / static_cast<double>(n));
  stats.cv_pct = stats.mean_us > 0 ? stdev / stats.mean_us * 100 : 0;
  return stats;
}

}  // namespace stratacl::bench
