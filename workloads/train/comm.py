"""The communication switch every trainer goes through, and the clock of exposed communication.

Three paths, the same calls:
- `stratacl`: a "stratacl" process group, with the StrataCL heap as torch's allocator (turned on
  by the trainer before the model is built), so parameters, gradients and activations are
  buffers peers read and write in place.
- `buffered`: the same process group over torch's own tensors: StrataCL stages every call
  through its buffers, as a buffer-centric library does.
- `gloo`: torch's gloo. Torch 1.13's gloo has neither all_gather into one tensor nor
  reduce_scatter, so those are its list-form all_gather into views of the output, and all_reduce
  plus a slice.

Exposed communication is the time the step spends inside these calls (issuing them and
waiting for them): what the step waits for the network, the part compute did not hide.
"""
import time

import torch.distributed as dist

PATHS = ("stratacl", "buffered", "gloo")


class Work:
    """An asynchronous call; `wait()` counts the time it blocks as exposed, then runs `after`
    (the gloo forms' copy out)."""

    def __init__(self, comm, work, after=None):
        self.comm, self.work, self.after = comm, work, after

    def wait(self):
        with self.comm.clock():
            if self.work is not None:
                self.work.wait()
            if self.after is not None:
                self.after()
            self.work = self.after = None


class Comm:
    def __init__(self, path, group, parent=None):
        self.path, self.group, self.parent = path, group, parent
        self.size, self.rank = dist.get_world_size(group), dist.get_rank(group)
        self.phase = "forward"
        self.exposed = {}  # seconds per phase
        self._depth = 0  # clocks nest (an exchange's own clock around its calls): count once

    def subgroup(self):
        """The same path on a new group of the same ranks, timed on this Comm's clock. Calls
        that autograd issues in an order that may differ across ranks (an exchange's, beside
        DDP's bucket allreduces) need a group of their own, as Megatron's expert-parallel
        group is."""
        group = dist.new_group(backend="gloo" if self.path == "gloo" else "stratacl")
        return Comm(self.path, group, parent=self)

    def clock(self):
        return _Clock(self.parent or self)

    def reset(self):
        self.exposed = {}

    def all_reduce(self, t):
        """Sum in place, blocking."""
        with self.clock():
            dist.all_reduce(t, group=self.group)
        return t

    def all_gather(self, out, shard, async_op=False):
        """The ranks' equal shards, in rank order, into `out`."""
        with self.clock():
            if self.path == "gloo":
                work = dist.all_gather(list(out.chunk(self.size)), shard, group=self.group,
                                       async_op=True)
            else:
                work = dist.all_gather_into_tensor(out, shard, group=self.group, async_op=True)
        return self._finish(Work(self, work), async_op)

    def reduce_scatter(self, out, full, async_op=False):
        """This rank's shard of the sum of every rank's `full` (which gloo overwrites)."""
        with self.clock():
            if self.path == "gloo":
                work = dist.all_reduce(full, group=self.group, async_op=True)
                part = full.chunk(self.size)[self.rank]
                return self._finish(Work(self, work, lambda: out.copy_(part)), async_op)
            work = dist.reduce_scatter_tensor(out, full, group=self.group, async_op=True)
        return self._finish(Work(self, work), async_op)

    def all_to_all(self, out, inp, out_splits=None, in_splits=None, async_op=False):
        with self.clock():
            work = dist.all_to_all_single(out, inp, out_splits, in_splits, group=self.group,
                                          async_op=True)
        return self._finish(Work(self, work), async_op)

    @staticmethod
    def _finish(work, async_op):
        if async_op:
            return work
        work.wait()
        return None


class _Clock:
    def __init__(self, comm):
        self.comm = comm

    def __enter__(self):
        self.comm._depth += 1
        self.t0 = time.perf_counter()

    def __exit__(self, *exc):
        c = self.comm
        c._depth -= 1
        if c._depth == 0:
            c.exposed[c.phase] = c.exposed.get(c.phase, 0.0) + time.perf_counter() - self.t0
