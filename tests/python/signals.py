"""Loading StrataCL leaves a program's signal handling as it was.

Debian's libfabric links libinfinipath, which takes over SIGINT, SIGTERM and the crash signals
when it loads and exits with status 1 on them (src/net/load_signals.h). Checked here:
- after `import stratacl`, SIGINT still raises KeyboardInterrupt, also where libinfinipath was
  loaded before the package;
- a process that imported the package, or loaded the C library alone (ctypes, without the
  package's IPATH_NO_BACKTRACE), still dies of SIGTERM and of SIGABRT.
"""
import os
import signal
import subprocess
import sys

# As an interactive program has them, whatever this test inherited (a background job of a
# shell starts with SIGINT ignored, and then Python installs no handler for it).
signal.signal(signal.SIGINT, signal.default_int_handler)

import stratacl  # noqa: E402,F401  (loads the C library)

failed = 0
try:
    os.kill(os.getpid(), signal.SIGINT)
    signal.sigtimedwait([], 0)  # a call: Python runs its pending handlers here at the latest
    print("FAIL signals: SIGINT did not raise KeyboardInterrupt", flush=True)
    failed += 1
except KeyboardInterrupt:
    pass

with open("/proc/self/maps") as maps:
    library = next(line.split()[-1] for line in maps if "libstratacl.so" in line)
child_env = {k: v for k, v in os.environ.items() if k != "IPATH_NO_BACKTRACE"}
loads = {"the package": "import stratacl",
         "the C library": f"import ctypes; ctypes.CDLL({library!r})"}
checked = 1
for what, load in loads.items():
    for sig in (signal.SIGTERM, signal.SIGABRT):
        code = (f"import os, signal\nsignal.signal({int(sig)}, signal.SIG_DFL)\n{load}\n"
                f"os.kill(os.getpid(), {int(sig)})\n")
        r = subprocess.run([sys.executable, "-c", code], env=child_env, capture_output=True,
                           text=True, timeout=60)
        checked += 1
        if r.returncode != -sig:
            failed += 1
            print(f"FAIL signals: a process that loaded {what} ended with {r.returncode} on "
                  f"{sig.name}, not by the signal ({-int(sig)}): {r.stderr.strip()[:300]}",
                  flush=True)
# libinfinipath loaded before the package (as an MPI's plugins may load it): Ctrl-C still
# raises KeyboardInterrupt.
code = ("import ctypes, os, signal\nctypes.CDLL('libinfinipath.so.4')\nimport stratacl\n"
        "try:\n    os.kill(os.getpid(), signal.SIGINT)\n    signal.sigtimedwait([], 0)\n"
        "except KeyboardInterrupt:\n    os._exit(7)\n")
r = subprocess.run([sys.executable, "-c", code], env=child_env, capture_output=True, text=True,
                   timeout=60)
checked += 1
if r.returncode != 7:
    failed += 1
    print(f"FAIL signals: with libinfinipath loaded first, SIGINT ended the process with "
          f"{r.returncode}, not KeyboardInterrupt: {r.stderr.strip()[:300]}", flush=True)
print(f"signals: {checked - failed} of {checked} checks passed", flush=True)
sys.exit(1 if failed else 0)
