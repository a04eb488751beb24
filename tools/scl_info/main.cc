// scl-info: what this StrataCL build and machine will do: version, reduction ISA, heap capacity
// and use, the memory a communicator costs, and every configuration variable with its source.
#include <cstdio>

#include "comm/control_layout.h"
#include "core/config.h"
#include "fabric/heap.h"
#include "reduce/reduce.h"
#include "stratacl/stratacl.h"

using namespace stratacl;

int main() {
  int version = 0;
  sclGetVersion(&version);
  std::printf("StrataCL %d.%d.%d\n", version / 10000, version / 100 % 100, version % 100);
  std::printf("reduction ISA   : %s", reduce::isa_name(reduce::active_isa()));
  std::printf("  (supported:");
  for (reduce::Isa isa : {reduce::Isa::kAvx512, reduce::Isa::kAvx2, reduce::Isa::kScalar}) {
    if (reduce::isa_supported(isa)) std::printf(" %s", reduce::isa_name(isa));
  }
  std::printf(")\n");

  Result<Heap*> heap = Heap::instance();
  if (!heap.ok()) {
    std::printf("heap            : unavailable: %s\n", heap.status().message().c_str());
  } else {
    Heap::Stats s = (*heap)->stats();
    std::printf("heap capacity   : %llu bytes (sparse memfd; pages cost nothing until touched)\n",
                (unsigned long long)s.capacity);
    std::printf("heap in use     : %llu bytes in %llu blocks (peak %llu)\n",
                (unsigned long long)s.in_use, (unsigned long long)s.live_blocks,
                (unsigned long long)s.peak);
  }
  for (int n : {2, 8, 64}) {
    const ControlLayout layout = ControlLayout::of(n);
    std::printf("control block   : %zu bytes per rank for %d ranks (+ %zu bytes of doorbells)\n",
                layout.bytes(), n, layout.lines() * sizeof(Doorbell));
  }
  std::printf("staging area    : %lld bytes per communicator, touched only for foreign buffers\n",
              (long long)process_value(Var::kStagingBytes));

  std::printf("\n%-28s %-16s %-12s %s\n", "variable", "value", "source", "meaning");
  for (const VarSpec& v : all_vars()) {
    Result<Setting> s = process_setting(v.id);
    if (!s.ok()) {
      std::printf("%-28s %-16s %-12s %s\n", v.name, "INVALID", "environment",
                  s.status().message().c_str());
      continue;
    }
    std::printf("%-28s %-16s %-12s %s\n", v.name, s->text.c_str(), source_name(s->source), v.help);
  }
  return 0;
}
