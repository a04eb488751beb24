// fault_tests <case>: run under stratarun. Each case exits 0 when the library behaved.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fault_common.h"

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // lines reach the launcher even if we are killed
  const std::string which = argc > 1 ? argv[1] : "";
  if (which == "bad_arguments") return fault::run_bad_arguments();
  if (which == "mismatch") return fault::run_mismatch();
  if (which == "kill") return fault::run_kill_survivor(argc > 2 ? std::atoi(argv[2]) : 1, 400);
  if (which == "never_arrives") return fault::run_peer_never_arrives();
  if (which == "abort") return fault::run_abort();
  std::fprintf(stderr, "usage: fault_tests bad_arguments|mismatch|kill [victim]|never_arrives|abort\n");
  return 2;
}
