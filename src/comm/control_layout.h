// The layout of a communicator's control blocks: the core lines (sync/control_block.h), then each
// protocol's region in a fixed order, so every rank computes the same offsets from the rank
// count. A protocol that publishes something new declares its region here.
#pragma once

#include <cstdint>

#include "coll/context.h"
#include "comm/shared_settings.h"
#include "comm/shrink_record.h"
#include "fabric/cma_agreement.h"
#include "moe/lines.h"
#include "sync/region.h"

namespace stratacl {

// What a rank announces in sclCommSplit's step: its colour and key, where the blocks it allocated
// for the child communicator are, and whether it could prepare them (a result code).
struct SplitAnnouncement {
  int64_t color = 0, key = 0;
  uint64_t cb_offset = 0, doorbell_offset = 0;
  uint64_t staging_offset = 0, staging_bytes = 0;
  int32_t prepared = 0;
};

struct ControlLayout {
  RegionLayout regions;
  CollRegions coll;
  Region<CmaVerdict> cma;
  Region<SharedSettings> settings;
  Region<SplitAnnouncement> split;
  Region<moe::Lines> moe;
  Region<ShrinkSlot> shrink;

  static ControlLayout of(int nranks);
  size_t bytes() const { return regions.total_bytes(); }
  size_t lines() const { return regions.lines(); }
};

}  // namespace stratacl
