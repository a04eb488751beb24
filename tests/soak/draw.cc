#include "draw.h"

#include <cmath>
#include <set>

#include "reference.h"

namespace soak {

using mp::Coll;

namespace {

// Collectives whose largest buffer holds nranks * count elements.
bool scales_with_ranks(Coll c) {
  return c == Coll::kAllGather || c == Coll::kReduceScatter || c == Coll::kAlltoAll ||
         c == Coll::kAlltoAllv || c == Coll::kGather || c == Coll::kScatter;
}

// Placement names must outlive the calls: interned here.
const char* intern(const std::string& s) {
  static std::set<std::string> names;
  return names.insert(s).first->c_str();
}

constexpr size_t kOffsets[] = {0, 0, 0, 0, 1, 2, 3, 7, 16, 61};

}  // namespace

Action draw_action(Rng& rng) {
  const uint64_t u = rng.below(1000);
  if (u < 6) return Action::kRecreateComm;     // 0.6 %
  if (u < 8) return Action::kRecreateStreams;  // 0.2 %
  if (u < 48) return Action::kStreams;         // 4 %
  return Action::kCall;
}

size_t draw_bytes(Rng& rng) {
  const uint64_t u = rng.below(1000);
  if (u < 40) return 0;
  double lo, hi;
  if (u < 540) {
    lo = 1, hi = 4 * kKiB;
  } else if (u < 840) {
    lo = 4 * kKiB, hi = 256 * kKiB;
  } else if (u < 970) {
    lo = 256 * kKiB, hi = 4 * kMiB;
  } else {
    lo = 4 * kMiB, hi = 8 * kMiB;
  }
  const double b = std::exp(std::log(lo) + rng.unit() * (std::log(hi) - std::log(lo)));
  return size_t(b) < 1 ? 1 : size_t(b);
}

Drawn draw_call(Rng& rng, uint64_t seed, size_t max_bytes, bool exact) {
  Drawn d;
  // Allreduce twice as often as the others.
  const uint64_t k = rng.below(kNumColls + 1);
  d.coll = k == kNumColls ? Coll::kAllReduce : mp::kAllColls[k];
  d.dtype = mp::kAllDtypes[rng.below(std::size(mp::kAllDtypes))];
  int op = int(mp::kAllOps[rng.below(std::size(mp::kAllOps))]);
  if (exact && stratacl::dtype_floating(d.dtype) && op != sclMax && op != sclMin) {
    op = op == sclProd ? sclMin : sclMax;
  }
  d.op = mp::reduces(d.coll) ? op : -1;
  d.bytes = draw_bytes(rng);
  if (d.bytes > max_bytes) d.bytes = max_bytes;
  d.root_draw = rng.next();
  const bool in_place = rng.chance(0.3);
  d.in_place = in_place && mp::has_in_place(d.coll);
  switch (rng.below(4)) {
    case 0:
      d.send_mem = d.recv_mem = mp::Mem::kHeap;
      break;
    case 1:
      d.send_mem = d.recv_mem = mp::Mem::kMalloc;
      break;
    case 2:
      d.send_mem = mp::Mem::kHeap, d.recv_mem = mp::Mem::kMalloc;
      break;
    default:
      d.send_mem = mp::Mem::kMalloc, d.recv_mem = mp::Mem::kHeap;
      break;
  }
  d.send_offset = kOffsets[rng.below(std::size(kOffsets))];
  d.recv_offset = kOffsets[rng.below(std::size(kOffsets))];
  d.null_when_empty = rng.chance(0.5);
  d.seed = mp::ref::make_seed(seed, rng.next());
  return d;
}

mp::CallSpec make_spec(const Drawn& d, const mp::Comm& c, const std::string& context) {
  mp::CallSpec spec;
  spec.coll = d.coll;
  spec.dtype = d.dtype;
  spec.op = d.op;
  const size_t es = mp::dtype_size(d.dtype);
  size_t count = d.bytes / es;
  if (scales_with_ranks(d.coll)) count /= size_t(c.n);
  if (d.bytes > 0 && count == 0) count = 1;
  spec.count = count;
  spec.root = mp::rooted(d.coll) ? int(d.root_draw % uint64_t(c.n)) : -1;
  mp::Placement& pl = spec.placement;
  pl.in_place = d.in_place;
  pl.send_mem = d.send_mem;
  pl.recv_mem = d.recv_mem;
  pl.send_offset = d.send_offset;
  pl.recv_offset = d.recv_offset;
  auto where = [](mp::Mem m, size_t off) {
    std::string name = mp::mem_name(m);
    if (off) name.append("+").append(std::to_string(off));
    return name;
  };
  pl.name = intern(d.in_place ? "buf=" + where(d.recv_mem, d.recv_offset)
                              : "send=" + where(d.send_mem, d.send_offset) +
                                    " recv=" + where(d.recv_mem, d.recv_offset));
  spec.null_when_empty = d.null_when_empty;
  spec.seed = d.seed;
  spec.context = context;
  return spec;
}

}  // namespace soak
