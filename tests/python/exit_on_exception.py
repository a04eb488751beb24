"""A rank that ends on an uncaught exception with calls in flight leaves at once, and its peer's
next call on the group fails naming it.

Rank 0 queues an allreduce that rank 1 does not join while rank 0 lives, and a send the backend
holds back, then raises. At exit StrataCL revokes its groups (sys.last_value marks an uncaught
exception), so the queued calls fail at once and rank 0 exits, instead of waiting out the
group's timeout (200 s here) for a peer that is itself waiting for it to go. Rank 1 waits until
rank 0's process is gone (at most 60 s); then its allreduce must raise naming rank 0.
exit_on_exception.sh checks stratarun's verdict: rank 0 exited with status 1, and rank 1
reported.
"""
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist

from common import init

RANK, N = init("exit_on_exception", timeout=datetime.timedelta(seconds=200))
assert N == 2, "two ranks"
pid_file = os.path.join(os.environ["STRATACL_TEST_DIR"], "rank0.pid")
values = torch.ones(1024)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has left
    except FileNotFoundError:
        return False


if RANK == 0:
    dist.all_reduce(values, async_op=True)
    dist.isend(-values, 1)  # held back: at exit it fails at once (revoked), and is not sent
    with open(pid_file + ".tmp", "w") as f:
        f.write(str(os.getpid()))
    os.rename(pid_file + ".tmp", pid_file)
    raise RuntimeError("rank 0 fails with a call in flight (on purpose)")

while not os.path.exists(pid_file):
    time.sleep(0.01)
with open(pid_file) as f:
    pid = int(f.read())
raised = time.monotonic()
while alive(pid) and time.monotonic() - raised < 60:
    time.sleep(0.02)
gone = time.monotonic() - raised
if alive(pid):
    print(f"FAILED rank 1: rank 0 still runs {gone:.0f} s after it raised", flush=True)
    sys.exit(1)
try:
    dist.all_reduce(values)
    print("FAILED rank 1: an allreduce with rank 0 gone succeeded", flush=True)
except RuntimeError as e:
    verdict = "SURVIVED" if "rank 0" in str(e) else "FAILED"
    print(f"{verdict} rank 1: rank 0 left {gone:.1f} s after it raised; then: {e}", flush=True)
