// Debian's libfabric links the PSM providers' libinfinipath, whose constructor, when the library
// loads, takes over SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGILL and SIGABRT (unless
// IPATH_NO_BACKTRACE is set) with a handler that prints a backtrace and calls exit(1). A program
// that links StrataCL would then end with status 1 on Ctrl-C or a launcher's SIGTERM, run its
// atexit handlers from inside a signal handler, and report a crash as a plain failure.
// StrataCL puts every disposition libinfinipath took back to the default when it loads (a
// disposition libinfinipath replaced cannot be read back; before a program runs it is the
// default, unless its parent ignored the signal). stratarun and the Python package set
// IPATH_NO_BACKTRACE instead, so that nothing is taken.
#pragma once

namespace stratacl::net {

// The signals given back, by the time the library has loaded. Naming it keeps this file in a
// static link.
int signals_given_back();

}  // namespace stratacl::net
