"""A data-parallel training loop that survives a dead rank (the recipe in docs/PYTORCH.md).

Each step, the global batch is sharded over the communicator's ranks; each rank computes its
shard's gradient sum with autograd and the ranks allreduce it. One rank SIGKILLs itself mid-run.
The survivors catch stratacl.Error, shrink the communicator, re-shard the batch over the ranks
that remain, redo the step and go on. Since every step averages over the whole global batch,
the final weights must equal a single process's training on the same data.
"""
import os
import signal
import sys
import time

import numpy as np
import torch

import stratacl

STEPS, KILL_AT, VICTIM = 24, 7, 2
SAMPLES, FEATURES, LR = 96, 16, 0.05


def data():
    g = torch.Generator().manual_seed(7)
    x = torch.randn(SAMPLES, FEATURES, generator=g, dtype=torch.float64)
    y = x @ torch.linspace(-1, 1, FEATURES, dtype=torch.float64) + 0.1
    return x, y


def grad_sum(w, b, x, y):
    """Summed gradient of the squared error over the samples given (autograd)."""
    w = w.clone().requires_grad_(True)
    b = b.clone().requires_grad_(True)
    loss = ((x @ w + b - y) ** 2).sum()
    loss.backward()
    return torch.cat([w.grad, b.grad.reshape(1)])


def reference():
    x, y = data()
    w, b = torch.zeros(FEATURES, dtype=torch.float64), torch.zeros((), dtype=torch.float64)
    for step in range(STEPS):
        batch = torch.arange(step * 8, step * 8 + SAMPLES) % SAMPLES
        g = grad_sum(w, b, x[batch], y[batch]) / SAMPLES
        w, b = w - LR * g[:-1], b - LR * g[-1]
    return w, b


def main():
    comm = stratacl.Comm.from_env()
    me = comm.rank  # the rank in the first communicator: this process's name in the job
    x, y = data()
    w, b = torch.zeros(FEATURES, dtype=torch.float64), torch.zeros((), dtype=torch.float64)
    step, shrinks, failed_at, recovery_ms = 0, 0, None, []
    while step < STEPS:
        if me == VICTIM and step == KILL_AT:
            os.kill(os.getpid(), signal.SIGKILL)
        # This step's global batch, sharded over whoever is in the communicator now.
        batch = torch.arange(step * 8, step * 8 + SAMPLES) % SAMPLES
        mine = batch[comm.rank::comm.size]
        g = grad_sum(w, b, x[mine], y[mine]).numpy()
        try:
            comm.allreduce(g, g)
        except stratacl.Error as e:
            failed_at = failed_at or time.monotonic()
            print(f"rank {me}: step {step} failed ({e}); shrinking", flush=True)
            survivors = comm.shrink()  # agree on who is gone; revoke, then build without them
            comm.destroy()
            comm = survivors
            shrinks += 1
            continue  # redo the step with the new sharding
        if failed_at is not None:
            recovery_ms.append((time.monotonic() - failed_at) * 1e3)
            failed_at = None
        g = torch.from_numpy(g) / SAMPLES
        w, b = w - LR * g[:-1], b - LR * g[-1]
        step += 1
    want_w, want_b = reference()
    err = max(float((w - want_w).abs().max()), float(abs(b - want_b)))
    ok = comm.size == 3 and shrinks == 1 and err < 1e-12
    print(f"rank {me}: {'ELASTIC' if ok else 'FAILED'}: {STEPS} steps, {shrinks} shrink, "
          f"{comm.size} ranks at the end, largest difference from one process {err:.2e}, "
          f"failure to the next good step {', '.join(f'{t:.1f}' for t in recovery_ms)} ms",
          flush=True)
    comm.destroy()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
