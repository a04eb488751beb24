// Debian's libfabric links the PSM providers' libinfinipath, whose constructor, when the library
// loads, takes over SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGILL and SIGABRT (unless
// IPATH_NO_BACKTRACE is set) with a handler that prints a backtrace and calls exit(1). A program
// that links StrataCL would then end with status 1 on Ctrl-C or a launcher's SIGTERM, run its
// atexit handlers from inside a signal handler, and report a crash as a plain failure. So every
// disposition libinfinipath took is set back to the default when StrataCL loads, and again once
// libfabric has loaded its providers. What libinfinipath replaced cannot be read back: a program
// that had its own handler before it loaded (or a parent that ignored the signal) gets the
// default, not its own. stratarun and the Python package set IPATH_NO_BACKTRACE, so that nothing
// is taken; a program that embeds StrataCL should too.
#pragma once

namespace stratacl::net {

// Sets back to the default every signal whose handler is libinfinipath's; returns how many.
int give_back_signals();

}  // namespace stratacl::net
