"""What the Python tests share: joining the job stratarun started, and exact checks.

Every test runs one process per rank under stratarun (STRATACL_RANK, STRATACL_WORLD_SIZE) and
meets its peers through torch's file store in a directory the test command gives
(STRATACL_TEST_DIR), so runs never share a rendezvous.
"""
import os
import sys
import warnings

import torch
import torch.distributed as dist

import stratacl.torch  # noqa: F401  (registers the "stratacl" backend)

# torch 1.13 warns on every deprecated call the tests make on purpose (all_reduce_coalesced...).
warnings.filterwarnings("ignore", category=UserWarning, module="torch.distributed")


def rank_and_size():
    return int(os.environ["STRATACL_RANK"]), int(os.environ["STRATACL_WORLD_SIZE"])


def init(name, backend="stratacl", **kwargs):
    """The default group, through file:// in this test's own directory. With
    STRATACL_TEST_HEAP=1 every tensor the test makes is in the StrataCL heap (zero copy);
    otherwise StrataCL stages them."""
    if os.environ.get("STRATACL_TEST_HEAP") == "1":
        stratacl.torch.use_heap_allocator()
    rank, size = rank_and_size()
    directory = os.environ.get("STRATACL_TEST_DIR", "/tmp")
    init_file = os.path.join(directory, f"{name}.{os.environ.get('STRATACL_JOB', 'job')}.init")
    dist.init_process_group(backend, init_method=f"file://{init_file}", rank=rank,
                            world_size=size, **kwargs)
    return rank, size


class Checks:
    """Counts checks; prints the first failures with what was expected."""

    def __init__(self, name):
        self.name, self.passed, self.failed = name, 0, 0

    def equal(self, got, want, what):
        if got.dtype == want.dtype and got.shape == want.shape and torch.equal(got, want):
            self.passed += 1
            return
        self.failed += 1
        if self.failed <= 10:
            print(f"FAIL {self.name}: {what}: got {got.dtype} {tuple(got.shape)} "
                  f"{got.flatten()[:8].tolist()}..., want {want.dtype} {tuple(want.shape)} "
                  f"{want.flatten()[:8].tolist()}...", file=sys.stderr, flush=True)

    def true(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {self.name}: {what}", file=sys.stderr, flush=True)

    def finish(self):
        rank, _ = rank_and_size()
        print(f"{self.name} rank {rank}: {self.passed} checks passed, {self.failed} failed",
              flush=True)
        return 1 if self.failed or not self.passed else 0


def leave(checks):
    """Ends a test that ran calls on gloo too: prints its verdict, destroys the groups and exits
    without finalizing the interpreter. torch 1.13's gloo drops a call's tensors on its worker
    thread after the call has completed; when that thread asks for the GIL as the interpreter
    begins to finalize, CPython ends it inside a destructor and the process aborts
    (ProcessGroupGloo::runLoop, ~TensorImpl, pthread_exit). StrataCL waits for its own streams
    at exit (exit_in_flight.py); nothing can wait for gloo's threads."""
    code = checks.finish()
    dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def layout_reference(topk_idx, num_experts, num_ranks, owner):
    """DeepEP's dispatch layout of `topk_idx` computed plainly: is_token_in_rank [T, R] (bool),
    tokens per rank [R] and tokens per expert [E] (int32); -1 entries route nowhere."""
    in_rank = torch.zeros(topk_idx.shape[0], num_ranks, dtype=torch.bool)
    per_expert = torch.zeros(num_experts, dtype=torch.int32)
    for t in range(topk_idx.shape[0]):
        for e in topk_idx[t].tolist():
            if e >= 0:
                in_rank[t, owner(e)] = True
                per_expert[e] += 1
    return in_rank, in_rank.sum(0).to(torch.int32), per_expert
