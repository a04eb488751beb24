// The table of collectives scl-bench measures: how each is called, how big its buffers are,
// its bus-bandwidth factor, and where every output element comes from (for checking).
#ifndef STRATACL_TOOLS_SCL_BENCH_COLLECTIVES_H_
#define STRATACL_TOOLS_SCL_BENCH_COLLECTIVES_H_

#include <cstddef>
#include <span>
#include <string_view>

#include "stratacl/stratacl.h"

namespace stratacl::bench {

// One rank's view of one row: `count` is the row's total element count (the count column).
struct Placement {
  size_t count;
  int nranks;
  int rank;
  int root;
};

// Element counts and in-place offsets of one rank for one row.
struct Geometry {
  size_t input_elems;   // elements this rank contributes; 0 when its send buffer is unused
  size_t output_elems;  // elements this rank receives and checks; 0 when it receives nothing
  // In-place form only: element offsets of the input and of the output inside the recv buffer,
  // following NCCL's aliasing rules.
  size_t in_place_input;
  size_t in_place_output;
};

// Where output element j of a rank comes from.
struct Source {
  bool reduced;  // true: the reduction over all ranks of input element `index`
  int rank;      // when not reduced: the rank whose input holds the value
  size_t index;  // element index into that rank's input (or the reduced element index)
};

// Arguments of one call of a collective.
struct LaunchArgs {
  const void* send;
  void* recv;
  Placement placement;
  sclDataType_t type;
  sclRedOp_t op;
  sclComm_t comm;
};

// The outcome of one launch; `call` names the library function that failed.
struct LaunchResult {
  sclResult_t result;
  const char* call;
};

struct Collective {
  std::string_view name;
  bool reduces;       // takes a reduction operation (-o applies)
  bool rooted;        // takes a root (-r applies)
  bool splits;        // the buffer is split among ranks: count is a multiple of the rank count
  bool has_in_place;  // defines an in-place form that scl-bench measures
  double (*bus_factor)(int nranks);
  Geometry (*geometry)(const Placement& placement);
  Source (*source)(const Placement& placement, size_t output_index);
  LaunchResult (*launch)(const LaunchArgs& args);
  // Where nccl-tests' algbw is not size / time (hypercube): algbw = size / time * alg_factor.
  double (*alg_factor)(int nranks) = nullptr;  // nullptr: 1
  // Each rank's chunk of a split buffer is a multiple of this many bytes (hypercube: 16).
  size_t chunk_align_bytes = 0;
  bool needs_power_of_two = false;  // runs only on 1, 2, 4, ... ranks (nccl-tests skips others)
};

// Every collective, in the order `all` runs them.
std::span<const Collective> all_collectives();

// nullptr when `name` is not a collective.
const Collective* find_collective(std::string_view name);

// The row's element count for a size in bytes, rounded down to a multiple of the rank count
// when the collective splits its buffer, and each rank's chunk down to the collective's chunk
// alignment (as nccl-tests does).
size_t element_count(const Collective& collective, size_t bytes, size_t elem_size, int nranks);

}  // namespace stratacl::bench

#endif  // STRATACL_TOOLS_SCL_BENCH_COLLECTIVES_H_
