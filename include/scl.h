/* The header an NCCL program includes once renamed: `#include <nccl.h>` becomes
 * `#include <scl.h>` under the porting rename (docs/PORTING.md). */
#ifndef STRATACL_SCL_H_
#define STRATACL_SCL_H_
#include "stratacl/stratacl.h"
#endif
