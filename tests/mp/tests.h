// The cases of mp_tests; each runs on the world communicator (World()) and returns the exit
// status of this rank (see Finish() in harness.h). argv holds the arguments after the case name.
#pragma once

namespace mp {

int RunCollectives(int argc, char** argv);
int RunLarge(int argc, char** argv);
int RunDeterminism(int argc, char** argv);
void DeterminismBeforeInit();  // picks this rank's reduction ISA
int RunComms(int argc, char** argv);
int RunStreams(int argc, char** argv);
int RunLoop(int argc, char** argv);
int RunP2p(int argc, char** argv);
int RunMixed(int argc, char** argv);

}  // namespace mp
