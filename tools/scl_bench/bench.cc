#include "bench.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "check.h"
#include "datatypes.h"
#include "errors.h"

namespace stratacl::bench {
namespace {

constexpr size_t kAlignment = 64;

// Largest buffer any row needs: every collective's send and recv fit in its row's byte size.
size_t largest_size(const std::vector<size_t>& sizes) {
  return std::max(*std::max_element(sizes.begin(), sizes.end()), kAlignment);
}

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
      send_(largest_size(sizes_), options.mem),
      recv_(largest_size(sizes_), options.mem),
      stats_((static_cast<size_t>(options.repeats) + 1) * sizeof(double), MemKind::kHeap) {
  std::memset(send_.data(), 0, largest_size(sizes_));
  std::memset(recv_.data(), 0, largest_size(sizes_));
  if (effective_mode(options) == Mode::kCma) measure_registration();
}

// Registers both buffers (new ranges), then times registering the send buffer's range again and
// again (cache hits: a reference each) and dropping those references.
void Bench::measure_registration() {
  constexpr int kCached = 1000;
  registration_.buffers = 2;
  registration_.bytes = largest_size(sizes_);
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
  report.begin_table({collective.name, nranks_, mem_kind_name(options_.mem),
                      mode_name(effective_mode(options_)), options_.iters, options_.warmup,
                      options_.check, options_.repeats, version_});
  // Operations only matter to reductions; the others run once per type under a dummy op.
  const std::vector<sclRedOp_t> ops =
      collective.reduces ? options_.ops : std::vector<sclRedOp_t>{sclSum};

  for (sclDataType_t type : options_.types) {
    const size_t elem_size = type_size(type);
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
      for (size_t count : counts) {
        Row row{};
        row.bytes = count * elem_size;
        row.count = count;
        row.type = type;
        if (collective.reduces) row.op = op;
        row.root = collective.rooted ? options_.root : -1;
        row.bus_factor = collective.bus_factor(nranks_);
        row.out_of_place = measure(collective, type, op, count, /*in_place=*/false);
        if (collective.has_in_place) {
          row.in_place = measure(collective, type, op, count, /*in_place=*/true);
        }
        report.add_row(row);
      }
    }
  }
  report.end_table();
}

Measurement Bench::measure(const Collective& collective, sclDataType_t type, sclRedOp_t op,
                           size_t count, bool in_place) {
  const Placement placement{count, nranks_, rank_, options_.root};
  const Geometry geometry = collective.geometry(placement);
  const size_t elem_size = type_size(type);

  LaunchArgs args{send_.data(), recv_.data(), placement, type, op, comm_};
  void* input = send_.data();
  if (in_place) {
    char* input_at = recv_.data() + geometry.in_place_input * elem_size;
    args.send = input_at;
    args.recv = recv_.data() + geometry.in_place_output * elem_size;
    input = input_at;
  }

  Measurement m;
  m.measured = true;
  if (options_.check) {
    // The sentinel goes first: in place, the input may lie inside the output.
    const ValueScheme scheme = scheme_for(collective, op);
    fill_sentinel(args.recv, geometry.output_elems, type);
    fill_input(input, geometry.input_elems, type, scheme, nranks_, rank_);
    launch(collective, args);
    m.wrong = sum_over_ranks(
        count_wrong(args.recv, geometry.output_elems, type, op, scheme, collective, placement));
  }

  for (int i = 0; i < options_.warmup; ++i) launch(collective, args);

  std::vector<double> local_us;
  for (int repeat = 0; repeat < options_.repeats; ++repeat) {
    // Lined up by the barrier, the ranks start together and the slowest one sets the time.
    require(sclBarrier(comm_, nullptr), "sclBarrier");
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < options_.iters; ++i) launch(collective, args);
    const std::chrono::duration<double, std::micro> elapsed =
        std::chrono::steady_clock::now() - start;
    local_us.push_back(elapsed.count() / options_.iters);
  }
  const Percentiles times = slowest_percentiles(local_us);
  m.time_us = times.median;
  m.p99_us = times.p99;
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

Bench::Percentiles Bench::slowest_percentiles(const std::vector<double>& local_us) {
  auto* slots = reinterpret_cast<double*>(stats_.data());
  std::copy(local_us.begin(), local_us.end(), slots);
  require(sclAllReduce(slots, slots, local_us.size(), sclFloat64, sclMax, comm_, nullptr),
          "sclAllReduce");
  std::vector<double> slowest(slots, slots + local_us.size());
  std::sort(slowest.begin(), slowest.end());
  const size_t n = slowest.size();
  const size_t mid = n / 2;
  Percentiles result;
  result.median = n % 2 == 1 ? slowest[mid] : (slowest[mid - 1] + slowest[mid]) / 2;
  // Nearest rank: the smallest time that at least 99% of the repeats do not exceed (with fewer
  // than 100 repeats, the slowest one).
  const size_t rank = (99 * n + 99) / 100;  // ceil(0.99 n), at least 1
  result.p99 = slowest[std::min(rank, n) - 1];
  return result;
}

}  // namespace stratacl::bench
