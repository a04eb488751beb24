"""A rank dies (SIGKILL) in the middle of a training-style loop of async allreduces: every
survivor's Work.wait() raises a RuntimeError that names the dead rank, within the timeout, and
the survivors then leave cleanly (destroy_process_group does not hang). Run by fault_kill.sh.
"""
import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

from common import init

TIMEOUT_S = 10
VICTIM = 2
RANK, N = init("fault_kill", timeout=timedelta(seconds=TIMEOUT_S))

t = torch.ones(1 << 16)
died_at = None
try:
    for step in range(10**6):
        if step == 20 and RANK == VICTIM:
            os.kill(os.getpid(), signal.SIGKILL)
        if step == 20:
            died_at = time.monotonic()  # the victim dies at about this moment
        dist.all_reduce(t, async_op=True).wait()
        t.fill_(1.0)
    print(f"FAILED rank {RANK}: the loop ended without an error", flush=True)
    sys.exit(1)
except RuntimeError as e:
    took = time.monotonic() - (died_at or time.monotonic())
    text = str(e)
    ok = f"rank {VICTIM}" in text and took < TIMEOUT_S + 5
    print(f"{'SURVIVED' if ok else 'FAILED'} rank {RANK} after {took:.2f} s: {text.splitlines()[0]}",
          flush=True)
    start = time.monotonic()
    dist.destroy_process_group()
    print(f"rank {RANK}: destroy_process_group took {time.monotonic() - start:.2f} s", flush=True)
    sys.exit(0 if ok else 1)
