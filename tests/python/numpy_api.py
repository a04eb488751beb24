"""stratacl (numpy): every method on heap and plain arrays, every element checked, and the errors
a user meets (wrong dtype, wrong size, destroyed communicator) raising stratacl.Error or
TypeError/ValueError with a message naming the argument. Run under stratarun on 1-4 ranks."""
import sys

import numpy as np

import stratacl

comm = stratacl.Comm.from_env()
R, N = comm.rank, comm.size
passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL numpy_api rank {R}: {what}", file=sys.stderr, flush=True)


def vals(rank, count, dtype):
    return ((np.arange(count) * 7 + rank * 3) % 5).astype(dtype)


for dtype in (np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64, np.float16,
              np.float32, np.float64):
    for count in (1, 33, 70000):
        for where in ("heap", "numpy"):
            def make(n):
                return stratacl.empty((n,), dtype) if where == "heap" else np.empty(n, dtype)
            what = f"{np.dtype(dtype).name} n={count} {where}"
            send = make(count)
            send[:] = vals(R, count, dtype)
            recv = make(count)
            comm.allreduce(send, recv)
            want = sum(vals(r, count, np.int64) for r in range(N)).astype(dtype)
            check(np.array_equal(recv, want), f"allreduce {what}")
            comm.allreduce(send, recv, op="max")
            check(np.array_equal(recv, np.max([vals(r, count, dtype) for r in range(N)], 0)),
                  f"allreduce max {what}")
            buf = make(count)
            buf[:] = vals(R, count, dtype)
            comm.broadcast(buf, root=N - 1)
            check(np.array_equal(buf, vals(N - 1, count, dtype)), f"broadcast {what}")
            gathered = make(count * N)
            comm.allgather(send, gathered)
            check(np.array_equal(gathered, np.concatenate([vals(r, count, dtype) for r in range(N)])),
                  f"allgather {what}")
            full = make(count * N)
            full[:] = vals(R, count * N, dtype)
            part = make(count)
            comm.reduce_scatter(full, part)
            total = sum(vals(r, count * N, np.int64) for r in range(N)).astype(dtype)
            check(np.array_equal(part, total[R * count:(R + 1) * count]), f"reduce_scatter {what}")
            a2a = make(count * N)
            comm.alltoall(full, a2a)
            want = np.concatenate([vals(r, count * N, dtype)[R * count:(R + 1) * count]
                                   for r in range(N)])
            check(np.array_equal(a2a, want), f"alltoall {what}")
            root_out = make(count)
            comm.reduce(send, root_out, op="sum", root=0)
            if R == 0:
                want = sum(vals(r, count, np.int64) for r in range(N)).astype(dtype)
                check(np.array_equal(root_out, want), f"reduce {what}")
if N > 1:
    ring = stratacl.empty((100,), np.float32)
    if R % 2 == 0:
        comm.send(vals(R, 100, np.float32), (R + 1) % N)
        comm.recv(ring, (R - 1) % N)
    else:
        comm.recv(ring, (R - 1) % N)
        comm.send(vals(R, 100, np.float32), (R + 1) % N)
    check(np.array_equal(ring, vals((R - 1) % N, 100, np.float32)), "send/recv ring")
comm.barrier()

sub = comm.split(R % 2, R)
check(sub.size == (N + 1 - R % 2) // 2 and sub.rank == R // 2, "split sizes and ranks")
x = np.full(10, R, np.int64)
sub.allreduce(x, x)
check(int(x[0]) == sum(r for r in range(N) if r % 2 == R % 2), "allreduce on the split")
sub.destroy()


def raises(kind, words, call):
    try:
        call()
        check(False, f"expected {kind.__name__} mentioning {words!r}")
    except kind as e:
        check(all(w in str(e) for w in words), f"{kind.__name__} message {e!r} names {words!r}")


raises(TypeError, ["dtype"], lambda: stratacl.empty((4,), np.complex64))
raises(TypeError, ["same dtype"], lambda: comm.allreduce(np.zeros(4, np.float32), np.zeros(4, np.int32)))
raises(ValueError, ["recv", "elements"], lambda: comm.allreduce(np.zeros(4), np.zeros(5)))
raises(ValueError, ["op"], lambda: comm.allreduce(np.zeros(4), np.zeros(4), op="xor"))
raises(ValueError, ["contiguous"], lambda: comm.allreduce(np.zeros(8)[::2], np.zeros(4)))
raises(stratacl.Error, ["root"], lambda: comm.broadcast(np.zeros(4), root=N))
raises(stratacl.Error, ["peer"], lambda: comm.send(np.zeros(4), N + 3))
comm.destroy()
raises(ValueError, ["destroyed"], lambda: comm.barrier())
print(f"numpy_api rank {R}: {passed} checks passed, {failed} failed", flush=True)
sys.exit(1 if failed or not passed else 0)
