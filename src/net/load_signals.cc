#include "net/load_signals.h"

#include <dlfcn.h>
#include <signal.h>

#include <cstring>

namespace stratacl::net {
namespace {

bool installed_by_infinipath(const struct sigaction& sa) {
  if (sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN) return false;
  const void* fn = (sa.sa_flags & SA_SIGINFO) ? reinterpret_cast<const void*>(sa.sa_sigaction)
                                              : reinterpret_cast<const void*>(sa.sa_handler);
  Dl_info info{};
  return dladdr(fn, &info) != 0 && info.dli_fname != nullptr &&
         std::strstr(info.dli_fname, "libinfinipath") != nullptr;
}

}  // namespace

int give_back_signals() {
  int n = 0;
  for (int sig = 1; sig < NSIG; ++sig) {
    struct sigaction sa {};
    if (sigaction(sig, nullptr, &sa) != 0 || !installed_by_infinipath(sa)) continue;
    signal(sig, SIG_DFL);
    ++n;
  }
  return n;
}

namespace {

// At load: libinfinipath, a dependency, has run its constructor by then.
[[maybe_unused]] const int g_given_back_at_load = give_back_signals();

}  // namespace

}  // namespace stratacl::net
