"""What a Work promises, as gloo behaves on the same calls: sizes checked before
anything is written, temporaries filled in the call's turn, each Work reporting its own result,
and sends and receives that progress together. Run under stratarun on 2 ranks.
"""
import sys

import torch
import torch.distributed as dist

from common import Checks, init

RANK, N = init("work_semantics")
SECOND = dist.new_group(backend="stratacl")
NEXT, PREV = (RANK + 1) % N, (RANK - 1) % N
checks = Checks("work_semantics")


def raises(call, what):
    """The call raises ValueError or RuntimeError naming `what` before it writes anything (gloo
    raises on each of these too; it is not run here, as it reports some of them on a later
    call's wait)."""
    try:
        call(None)
    except (ValueError, RuntimeError) as e:
        checks.true(what in str(e), f"the error names {what!r}: {e}")
    else:
        checks.true(False, f"expected an error naming {what!r}")


def sizes_are_checked():
    # An output smaller than the input, and larger: nothing may be written past the output.
    for out_len in (4, 16):
        guard = torch.full((out_len + 8,), -1.0)
        out = guard[:out_len]
        raises(lambda g: dist.all_to_all_single(out, torch.arange(8.0), group=g), "output")
        checks.equal(guard, torch.full((out_len + 8,), -1.0), f"nothing written ({out_len})")
    # Splits that fit each tensor but not the peers' (4 sent where 2 are expected): a mismatch.
    raises(lambda g: dist.all_to_all_single(torch.empty(4), torch.arange(8.0), [2] * N, [4] * N,
                                            group=g), "mismatched counts")
    # Rows of different widths.
    raises(lambda g: dist.all_to_all_single(torch.empty(2 * N, 3), torch.ones(2 * N, 2), group=g),
           "row")
    # The own block of the list form.
    outs = [torch.empty(1) for _ in range(N)]
    ins = [torch.ones(1) for _ in range(N)]
    outs[RANK] = torch.empty(3)
    raises(lambda g: dist.all_to_all(outs, ins, group=g), "own block")


def temporaries_filled_in_turn():
    # Two in-place allreduces of one transposed view, queued back to back: the second must read
    # what the first wrote.
    t = torch.ones(4, 2).t()
    works = [dist.all_reduce(t, async_op=True) for _ in range(2)]
    for w in works:
        w.wait()
    checks.equal(t, torch.full((2, 4), float(N * N)), "two queued allreduces of a view")
    # An allreduce, then a reduce_scatter whose input list holds the same tensor.
    x, y = torch.ones(4), torch.full((4,), 2.0)
    out = torch.empty(4)
    w1 = dist.all_reduce(x, async_op=True)
    w2 = dist.reduce_scatter(out, [x, y] if N == 2 else [x] + [y] * (N - 1), async_op=True)
    w1.wait()
    w2.wait()
    want = float(N * N) if RANK == 0 else float(2 * N)
    checks.equal(out, torch.full((4,), want), "reduce_scatter after an allreduce of its input")


def each_work_its_own_result():
    bad = torch.ones(4 if RANK == 0 else 8)
    try:
        dist.all_reduce(bad)
    except RuntimeError as e:
        checks.true("mismatch" in str(e) or "count" in str(e), f"the mismatch is named: {e}")
    else:
        checks.true(False, "a mismatched allreduce raises")
    good = torch.ones(8)
    try:
        dist.all_reduce(good)
        checks.equal(good, torch.full((8,), float(N)), "the next allreduce")
    except RuntimeError as e:
        checks.true(False, f"the allreduce after a mismatch raised: {e}")
    w = dist.all_reduce(torch.ones(3), async_op=True)
    checks.true(w.wait() and w.is_success(), "a later async allreduce succeeds")


def ring_exchange():
    sizes = [0, 1, 1000, 1 << 20]
    for dtype in (torch.float32, torch.int64, torch.bfloat16, torch.uint8):
        for n in sizes:
            x = (torch.arange(n) % 100 + RANK).to(dtype)
            o = torch.empty(n, dtype=dtype)
            s = dist.isend(x, NEXT)
            r = dist.irecv(o, PREV)
            s.wait()
            r.wait()
            checks.equal(o, (torch.arange(n) % 100 + PREV).to(dtype), f"ring {dtype} {n}")
    # Non-contiguous, and the future instead of wait; then a collective right after.
    x = (torch.arange(12.0) + RANK).reshape(3, 4).t()
    o = torch.empty(3, 4).t()
    works = [dist.isend(x, NEXT), dist.irecv(o, PREV)]
    futs = [w.get_future() for w in works]
    torch.futures.wait_all(futs)
    checks.equal(o, (torch.arange(12.0) + PREV).reshape(3, 4).t(), "ring of views")
    s = dist.isend(torch.full((5,), float(RANK)), NEXT)
    o = torch.empty(5)
    r = dist.irecv(o, PREV)
    total = torch.ones(2)
    dist.all_reduce(total)  # issues the held pair first, in order
    s.wait()
    r.wait()
    checks.equal(o, torch.full((5,), float(PREV)), "ring then allreduce")
    checks.equal(total, torch.full((2,), float(N)), "the allreduce after a ring")
    # Two groups: rank 0 sends on the world group, then on the second, and waits for the second
    # first; rank 1 receives in that order and waits for the first. Each half must not stay held.
    if RANK < 2:
        x, y, a, b = torch.full((3,), 7.0), torch.full((3,), 9.0), torch.empty(3), torch.empty(3)
        if RANK == 0:
            w1, w2 = dist.isend(x, 1), dist.isend(y, 1, group=SECOND)
            w2.wait()
            w1.wait()
        else:
            w1, w2 = dist.irecv(a, 0), dist.irecv(b, 0, group=SECOND)
            w1.wait()
            w2.wait()
            checks.equal(a, x, "a send held on one group, waited for through another")
            checks.equal(b, y, "the other group's send")


sizes_are_checked()
temporaries_filled_in_turn()
each_work_its_own_result()
ring_exchange()
dist.barrier()
sys.exit(checks.finish())
