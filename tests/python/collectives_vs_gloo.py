"""Every c10d collective on backend "stratacl", for every dtype, against the exact result and,
where gloo can run the same call, against gloo's result on the same inputs.

Inputs are small integers (in every dtype), so every reduction is exact in any order: results
are compared bitwise, every element. Shapes cover one element, odd sizes, a size above the
eager path, non-contiguous tensors (transposed views) and uneven all_to_all splits; then groups of
some ranks. Run under stratarun on 2-4 ranks, on one host or across hosts.
"""
import os
from datetime import timedelta

import torch
import torch.distributed as dist

from common import Checks, init, leave

RANK, N = init("collectives")
GLOO = dist.new_group(backend="gloo")
checks = Checks("collectives_vs_gloo")

# (dtype, the reductions it has): bool reduces as logical or/and, complex only sums.
NUMERIC = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.bfloat16,
           torch.float32, torch.float64]
ALL_OPS = ["SUM", "PRODUCT", "MIN", "MAX", "AVG"]
REDUCIBLE = [(t, ALL_OPS) for t in NUMERIC] + [(torch.bool, ["SUM", "PRODUCT", "MIN", "MAX"]),
                                                 (torch.complex64, ["SUM", "AVG"])]
# Moved as bytes where StrataCL has no such type.
MOVABLE = NUMERIC + [torch.bool, torch.int16, torch.complex64]
COUNTS = [1, 7, 1000, 65537]
# gloo in torch 1.13 has no AVG, and takes neither bool, complex, int16 nor bfloat16.
GLOO_TYPES = {torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16, torch.float32,
                torch.float64}


def values(dtype, rank, count, kind="sum"):
    """Rank `rank`'s input: small integers chosen so the reduction `kind` stays exact."""
    i = torch.arange(count, dtype=torch.int64)
    if kind == "PRODUCT":
        v = (i + rank) % 2 + 1
    elif kind in ("MIN", "MAX"):
        v = (i * 3 + rank * 5) % 7 - (0 if dtype == torch.uint8 else 3)
    else:
        v = (i * 7 + rank * 3) % 4
    if dtype == torch.bool:
        return v % 2 == 1
    if dtype.is_complex:
        return torch.complex(v.float(), (v + 1).float()).to(dtype)
    return v.to(dtype)


def expected_reduction(dtype, count, op):
    stack = torch.stack([values(dtype, r, count, op) for r in range(N)])
    if dtype == torch.bool:
        return stack.any(0) if op in ("SUM", "MAX") else stack.all(0)
    if dtype.is_complex:
        total = stack.to(torch.complex128).sum(0)
        return (total / N if op == "AVG" else total).to(dtype)
    wide = stack.to(torch.float64 if dtype.is_floating_point else torch.int64)
    if op == "SUM":
        return wide.sum(0).to(dtype)
    if op == "PRODUCT":
        return wide.prod(0).to(dtype)
    if op == "MIN":
        return wide.min(0).values.to(dtype)
    if op == "MAX":
        return wide.max(0).values.to(dtype)
    # AVG: integers divide the sum truncating; float16/bfloat16 divide in float32.
    if not dtype.is_floating_point:
        return torch.div(wide.sum(0), N, rounding_mode="trunc").to(dtype)
    exact = wide.sum(0)
    if dtype in (torch.float16, torch.bfloat16):
        return (exact.float() / N).to(dtype)
    return exact.to(dtype) / N


def strided(t):
    """The same values in a non-contiguous tensor (every other element of a wider one)."""
    wide = torch.zeros(t.numel() * 2, dtype=t.dtype)
    view = wide[::2]
    view.copy_(t.flatten())
    assert not view.is_contiguous() or t.numel() <= 1
    return view


def run(call, *args, **kwargs):
    """Calls a collective asynchronously and waits, so the Work path is what is tested."""
    work = call(*args, async_op=True, **kwargs)
    if work is not None:
        work.wait()


def test_allreduce():
    for dtype, ops in REDUCIBLE:
        for op in ops:
            for count in COUNTS:
                want = expected_reduction(dtype, count, op)
                t = values(dtype, RANK, count, op)
                run(dist.all_reduce, t, op=getattr(dist.ReduceOp, op))
                checks.equal(t, want, f"all_reduce {dtype} {op} n={count}")
                if dtype in GLOO_TYPES and op != "AVG":
                    g = values(dtype, RANK, count, op)
                    dist.all_reduce(g, op=getattr(dist.ReduceOp, op), group=GLOO)
                    checks.equal(t, g, f"all_reduce {dtype} {op} n={count} vs gloo")
            s = strided(values(dtype, RANK, 1001, "SUM"))
            dist.all_reduce(s)
            checks.equal(s.contiguous(), expected_reduction(dtype, 1001, "SUM"),
                         f"all_reduce non-contiguous {dtype}")
    for bad in (dist.ReduceOp.BAND, dist.ReduceOp.BOR, dist.ReduceOp.BXOR):
        try:
            dist.all_reduce(torch.ones(4, dtype=torch.int32), op=bad)
            checks.true(False, f"all_reduce {bad} should raise")
        except RuntimeError as e:
            checks.true("not supported" in str(e), f"all_reduce {bad} error names it: {e}")


def test_premul_sum():
    """PREMUL_SUM (torch's NCCL averaging op): the sum of every input times the factor, here a
    power of two so that the result is exact whichever way it is placed."""
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        factor = 0.25
        for make in ("float", "tensor"):
            op = dist._make_nccl_premul_sum(
                factor if make == "float" else [torch.tensor([factor], dtype=torch.float64)])
            for count in (1, 1000):
                want = (expected_reduction(dtype, count, "SUM").to(torch.float64) * factor).to(dtype)
                t = values(dtype, RANK, count, "SUM")
                run(dist.all_reduce, t, op=op)
                checks.equal(t, want, f"all_reduce PREMUL_SUM {make} {dtype} n={count}")
                t = values(dtype, RANK, count, "SUM")
                run(dist.reduce, t, dst=N - 1, op=op)
                if RANK == N - 1:
                    checks.equal(t, want, f"reduce PREMUL_SUM {make} {dtype} n={count}")
                out = torch.empty(count, dtype=dtype)
                ins = [values(dtype, RANK, count * N, "SUM")[r * count:(r + 1) * count].clone()
                       for r in range(N)]
                full = (expected_reduction(dtype, count * N, "SUM").to(torch.float64) * factor)
                run(dist.reduce_scatter, out, ins, op=op)
                checks.equal(out, full[RANK * count:(RANK + 1) * count].to(dtype),
                             f"reduce_scatter PREMUL_SUM {make} {dtype} n={count}")


def test_allreduce_coalesced():
    for dtype in (torch.float32, torch.int64):
        ts = [values(dtype, RANK, c, "SUM") for c in (3, 1000, 17)]
        dist.all_reduce_coalesced(ts)
        for t, c in zip(ts, (3, 1000, 17)):
            checks.equal(t, expected_reduction(dtype, c, "SUM"), f"all_reduce_coalesced {dtype}")


def test_broadcast_reduce():
    for dtype in MOVABLE:
        for count in COUNTS:
            for root in range(N):
                t = values(dtype, RANK, count)
                run(dist.broadcast, t, src=root)
                checks.equal(t, values(dtype, root, count), f"broadcast {dtype} n={count} root={root}")
                if dtype in GLOO_TYPES:
                    g = values(dtype, RANK, count)
                    dist.broadcast(g, src=root, group=GLOO)
                    checks.equal(t, g, f"broadcast {dtype} vs gloo")
        s = strided(values(dtype, RANK, 999))
        dist.broadcast(s, src=N - 1)
        checks.equal(s.contiguous(), values(dtype, N - 1, 999), f"broadcast non-contiguous {dtype}")
    for dtype, ops in REDUCIBLE:
        for op in ops:
            root = (ops.index(op) + 1) % N
            t = values(dtype, RANK, 1000, op)
            run(dist.reduce, t, dst=root, op=getattr(dist.ReduceOp, op))
            if RANK == root:
                checks.equal(t, expected_reduction(dtype, 1000, op), f"reduce {dtype} {op}")


def test_allgather():
    for dtype in MOVABLE:
        for count in COUNTS:
            want = [values(dtype, r, count) for r in range(N)]
            out = [torch.empty(count, dtype=dtype) for _ in range(N)]
            run(dist.all_gather, out, values(dtype, RANK, count))
            for r in range(N):
                checks.equal(out[r], want[r], f"all_gather {dtype} n={count} from {r}")
            if dtype in GLOO_TYPES:
                g = [torch.empty(count, dtype=dtype) for _ in range(N)]
                dist.all_gather(g, values(dtype, RANK, count), group=GLOO)
                checks.equal(torch.cat(out), torch.cat(g), f"all_gather {dtype} vs gloo")
            # One run of memory (chunks of one tensor): gathered in place.
            flat = torch.empty(count * N, dtype=dtype)
            dist.all_gather(list(flat.chunk(N)), values(dtype, RANK, count))
            checks.equal(flat, torch.cat(want), f"all_gather into chunks {dtype}")
            base = torch.empty(count * N, dtype=dtype)
            dist._all_gather_base(base, values(dtype, RANK, count))
            checks.equal(base, torch.cat(want), f"_all_gather_base {dtype} n={count}")
        s = [strided(torch.zeros(500, dtype=dtype)) for _ in range(N)]
        dist.all_gather(s, strided(values(dtype, RANK, 500)))
        for r in range(N):
            checks.equal(s[r].contiguous(), values(dtype, r, 500), f"all_gather non-contiguous {dtype}")
    ins = [values(torch.float32, RANK, c) for c in (5, 300)]
    outs = [[torch.empty(c) for c in (5, 300)] for _ in range(N)]
    dist.all_gather_coalesced(outs, ins)
    for r in range(N):
        for j, c in enumerate((5, 300)):
            checks.equal(outs[r][j], values(torch.float32, r, c), "all_gather_coalesced")


def test_gather_scatter():
    for dtype in MOVABLE:
        for count in (1, 1000):
            for root in range(N):
                out = [torch.empty(count, dtype=dtype) for _ in range(N)] if RANK == root else None
                run(dist.gather, values(dtype, RANK, count), gather_list=out, dst=root)
                if RANK == root:
                    for r in range(N):
                        checks.equal(out[r], values(dtype, r, count), f"gather {dtype} root={root}")
                got = torch.empty(count, dtype=dtype)
                pieces = [values(dtype, 100 + r, count) for r in range(N)] if RANK == root else None
                run(dist.scatter, got, scatter_list=pieces, src=root)
                checks.equal(got, values(dtype, 100 + RANK, count), f"scatter {dtype} root={root}")
                if dtype in GLOO_TYPES:
                    g = torch.empty(count, dtype=dtype)
                    gp = [values(dtype, 100 + r, count) for r in range(N)] if RANK == root else None
                    dist.scatter(g, scatter_list=gp, src=root, group=GLOO)
                    checks.equal(got, g, f"scatter {dtype} vs gloo")


def test_reduce_scatter():
    for dtype, ops in REDUCIBLE:
        for op in ops:
            for count in (1, 1000):
                full = expected_reduction(dtype, count * N, op)
                want = full[RANK * count:(RANK + 1) * count]
                out = torch.empty(count, dtype=dtype)
                ins = list(values(dtype, RANK, count * N, op).chunk(N))
                run(dist.reduce_scatter, out, ins, op=getattr(dist.ReduceOp, op))
                checks.equal(out, want, f"reduce_scatter {dtype} {op} n={count}")
                base = torch.empty(count, dtype=dtype)
                dist._reduce_scatter_base(base, values(dtype, RANK, count * N, op),
                                          op=getattr(dist.ReduceOp, op))
                checks.equal(base, want, f"_reduce_scatter_base {dtype} {op}")
                # Separate tensors (not one run of memory): flattened first.
                sep = [c.clone() for c in values(dtype, RANK, count * N, op).chunk(N)]
                out2 = torch.empty(count, dtype=dtype)
                dist.reduce_scatter(out2, sep, op=getattr(dist.ReduceOp, op))
                checks.equal(out2, want, f"reduce_scatter separate inputs {dtype} {op}")


def test_alltoall():
    for dtype in MOVABLE:
        for rows in (1, 300):
            inp = values(dtype, RANK, rows * N * 3).view(rows * N, 3)
            out = torch.empty_like(inp)
            run(dist.all_to_all_single, out, inp)
            want = torch.cat([values(dtype, r, rows * N * 3).view(rows * N, 3)[RANK * rows:(RANK + 1) * rows]
                              for r in range(N)])
            checks.equal(out, want, f"all_to_all_single even {dtype} rows={rows}")
            if dtype in GLOO_TYPES:
                g = torch.empty_like(inp)
                dist.all_to_all_single(g, inp, group=GLOO)
                checks.equal(out, g, f"all_to_all_single even {dtype} vs gloo")
        # Uneven: rank r sends (r + p + 1) rows to p (some ranks send 0 rows to... none here,
        # and p == 0 with r == 0 sends 1); a zero split is covered by rank 0 sending 0 to itself.
        send_splits = [0 if (RANK == 0 and p == 0) else RANK + p + 1 for p in range(N)]
        recv_splits = [0 if (RANK == 0 and r == 0) else r + RANK + 1 for r in range(N)]
        src = {r: values(dtype, r, sum(0 if (r == 0 and p == 0) else r + p + 1 for p in range(N)) * 2)
               .view(-1, 2) for r in range(N)}
        out = torch.empty(sum(recv_splits), 2, dtype=dtype)
        dist.all_to_all_single(out, src[RANK], recv_splits, send_splits)
        pieces = []
        for r in range(N):
            start = sum(0 if (r == 0 and p == 0) else r + p + 1 for p in range(RANK))
            pieces.append(src[r][start:start + recv_splits[r]])
        checks.equal(out, torch.cat(pieces), f"all_to_all_single uneven {dtype}")
        if dtype in GLOO_TYPES:
            g = torch.empty_like(out)
            dist.all_to_all_single(g, src[RANK], recv_splits, send_splits, group=GLOO)
            checks.equal(out, g, f"all_to_all_single uneven {dtype} vs gloo")
        # List form, with a different size per pair and a non-contiguous output.
        ins = [values(dtype, RANK * 10 + p, 5 + RANK + p) for p in range(N)]
        outs = [torch.empty(5 + r + RANK, dtype=dtype) for r in range(N)]
        outs[0] = strided(outs[0])
        run(dist.all_to_all, outs, ins)
        for r in range(N):
            checks.equal(outs[r].contiguous(), values(dtype, r * 10 + RANK, 5 + r + RANK),
                         f"all_to_all list {dtype} from {r}")


def test_p2p_barrier():
    for dtype in MOVABLE:
        nxt, prv = (RANK + 1) % N, (RANK - 1) % N
        # Even ranks send first: a blocking ring with no cycle of waiting sends.
        got = torch.empty(777, dtype=dtype)
        if RANK % 2 == 0:
            dist.send(values(dtype, RANK, 777), nxt)
            dist.recv(got, prv)
        else:
            dist.recv(got, prv)
            dist.send(values(dtype, RANK, 777), nxt)
        checks.equal(got, values(dtype, prv, 777), f"send/recv ring {dtype}")
        if RANK == 0:
            works = [dist.isend(values(dtype, 50 + p, 64), p) for p in range(1, N)]
            for w in works:
                w.wait()
        else:
            t = torch.empty(64, dtype=dtype)
            dist.irecv(t, 0).wait()
            checks.equal(t, values(dtype, 50 + RANK, 64), f"isend/irecv {dtype}")
    dist.barrier()
    # torch 1.13's dist.monitored_barrier refuses every backend but gloo: call the group's own.
    dist.distributed_c10d._get_default_group().monitored_barrier(timedelta(seconds=60))
    # Receives from any source: rank 0 takes every other rank's message in whatever order they
    # come (dist.recv returns the sender; irecv's Work names it), each checked against its sender.
    # Across hosts they are refused, at once, saying why.
    if os.environ.get("STRATACL_LOCAL_WORLD_SIZE", str(N)) != str(N):
        if RANK == 0:
            try:
                dist.recv(torch.empty(1))
                checks.true(False, "recv from any source across hosts should raise")
            except RuntimeError as e:
                checks.true("spans hosts" in str(e), f"recv from any source across hosts: {e}")
        dist.barrier()
        return
    for form in ("recv", "irecv"):
        if RANK == 0:
            seen = []
            for _ in range(1, N):
                t = torch.empty(300, dtype=torch.int32)
                if form == "recv":
                    src = dist.recv(t)
                else:
                    w = dist.irecv(t)
                    w.wait()
                    src = w._source_rank()
                seen.append(src)
                checks.equal(t, values(torch.int32, 100 + src, 300), f"{form} from any source")
            checks.true(sorted(seen) == list(range(1, N)), f"{form} from any source: {seen}")
        else:
            dist.send(values(torch.int32, 100 + RANK, 300), 0)
        dist.barrier()


def test_bad_arguments():
    """Refused at the call, on every rank, with a message naming what is wrong; the group goes on."""
    def refused(call, words, what):
        try:
            call()
            checks.true(False, f"{what}: should raise")
        except (RuntimeError, ValueError) as e:
            checks.true(all(w in str(e) for w in words), f"{what}: message {e!r} names {words}")

    refused(lambda: dist._all_gather_base(torch.empty(5), torch.ones(2)),
            ["world_size", "elements"], "_all_gather_base with a short output")
    refused(lambda: dist.all_gather([torch.empty(3, dtype=torch.int32) for _ in range(N)],
                                    torch.ones(3)), ["dtype"], "all_gather mixed dtypes")
    refused(lambda: dist.all_to_all_single(torch.empty(N), torch.ones(N), [1] * N, [2] * N),
            ["split"], "all_to_all_single with splits that do not add up")
    refused(lambda: dist.all_reduce(torch.ones(2).to_sparse()), ["dense"], "a sparse tensor")
    t = torch.ones(8)
    dist.all_reduce(t)
    checks.equal(t, torch.full((8,), float(N)), "the group works after refused calls")


def test_subgroups():
    """Groups of some ranks, in any order: every rank but the last, every other rank, and the
    reversed list of all. Across 2 hosts x 2 the first holds 2 ranks of one host and 1 of the
    other, which the library runs flat (every rank its own network node)."""
    for members in ([r for r in range(N - 1)] or [0], list(range(0, N, 2)), list(range(N))[::-1]):
        group = dist.new_group(members, backend="stratacl")
        if RANK not in members:
            continue
        ranks = sorted(members)  # torch numbers a group's ranks in ascending order
        t = values(torch.int32, RANK, 1001)
        dist.all_reduce(t, group=group)
        want = sum(values(torch.int32, r, 1001) for r in ranks)
        checks.equal(t, want, f"all_reduce on the group {members}")
        out = [torch.empty(77, dtype=torch.int64) for _ in ranks]
        dist.all_gather(out, values(torch.int64, RANK, 77), group=group)
        for got, r in zip(out, ranks):
            checks.equal(got, values(torch.int64, r, 77), f"all_gather on the group {members}")
        t = values(torch.float32, 7 + RANK, 5000)
        dist.broadcast(t, src=ranks[-1], group=group)
        checks.equal(t, values(torch.float32, 7 + ranks[-1], 5000), f"broadcast on {members}")


for test in (test_bad_arguments, test_allreduce, test_premul_sum, test_allreduce_coalesced,
             test_broadcast_reduce, test_allgather,
             test_gather_scatter, test_reduce_scatter, test_alltoall, test_p2p_barrier,
             test_subgroups):
    test()
leave(checks)
