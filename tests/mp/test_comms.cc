#include "tests.h"
#include "harness.h"
namespace mp {
int RunComms(int, char**) { return Finish("comms"); }
}
