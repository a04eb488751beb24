// The MoE steps (moe/moe.h): their descriptors, and what every rank checks of its peers first.
#pragma once

#include "coll/step.h"
#include "moe/moe.h"

namespace stratacl::moe {

// The descriptor of a MoE step: the call kind, with the row type and layout.
CallDesc step_desc(const CollContext& c, const Call& call);

// Every rank's plan is the same, and dispatches that reuse routing, and combines, follow the same
// handle on every rank (sclInvalidUsage otherwise, naming both ranks).
Status agree(const CollContext& c, Region<Lines> lines);

Status dispatch(CollContext& c, Region<Lines> lines, const Call& call);
Status combine(CollContext& c, Region<Lines> lines, const Call& call);

}  // namespace stratacl::moe
