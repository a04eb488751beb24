#include "comm/control_layout.h"

namespace stratacl {

ControlLayout ControlLayout::of(int nranks) {
  ControlLayout l;
  l.coll = CollRegions::declare(l.regions, nranks);
  l.cma = l.regions.add<CmaVerdict>();
  l.settings = l.regions.add<SharedSettings>();
  l.split = l.regions.add<SplitAnnouncement>();
  l.moe = l.regions.add<moe::Lines>();
  l.shrink = l.regions.add<ShrinkSlot>();
  return l;
}

}  // namespace stratacl
