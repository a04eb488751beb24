"""stratacl.moe.Buffer (DeepEP's shape) on torch tensors: layout, dispatch and combine in normal
and low-latency mode, bf16 and fp32 rows, -1 entries, a rank with no tokens, a reused handle,
every received row and every combined element checked bitwise against a reference built here
from everyone's inputs (gathered with all_gather). Values are small integers and weights powers
of two, so every sum is exact in any precision. Run under stratarun on 2-4 ranks.
"""
import gc
import sys

import torch
import torch.distributed as dist

from common import Checks, init, layout_reference
from stratacl.moe import Buffer

RANK, N = init("moe")
checks = Checks("moe_deepep")
H, K, E_PER_RANK, T_MAX = 256, 3, 2, 24
E = E_PER_RANK * N


def inputs(rank, dtype):
    """Rank `rank`'s tokens: T = 0 on the last rank of 3+, else 5 + 3 rank; some -1 entries."""
    t = 0 if (N >= 3 and rank == N - 1) else 5 + 3 * rank
    g = torch.Generator().manual_seed(1000 + rank)
    idx = torch.stack([torch.randperm(E, generator=g)[:K] for _ in range(t)]) if t else \
        torch.empty(0, K, dtype=torch.long)
    idx[::4, K - 1] = -1
    x = (torch.arange(t * H).view(t, H) % 13 + rank).to(dtype) if t else torch.empty(0, H, dtype=dtype)
    w = torch.tensor([0.5, 1.0, 2.0]).repeat(t, 1) if t else torch.empty(0, K)
    return x, idx, w


def nvl_bytes(dtype):
    """num_nvl_bytes for T_MAX tokens per rank: a normal dispatch receives at most N * T_MAX rows
    of H * max(element size, 2) bytes."""
    return N * T_MAX * H * max(torch.empty((), dtype=dtype).element_size(), 2)


def layout(buf, idx):
    """The layout tensors a new routing takes, as DeepEP's dispatch wants them."""
    per_rank, _, per_expert, in_rank, _ = buf.get_dispatch_layout(idx, E)
    return {"num_tokens_per_rank": per_rank, "is_token_in_rank": in_rank,
            "num_tokens_per_expert": per_expert}


def everyone(dtype):
    return [inputs(r, dtype) for r in range(N)]


def owner(e):
    return e // E_PER_RANK


def check_layout(buf, idx):
    per_rank, _, per_expert, in_rank, _ = buf.get_dispatch_layout(idx, E)
    want_in, want_rank, want_expert = layout_reference(idx, E, N, owner)
    checks.equal(in_rank, want_in, "is_token_in_rank")
    checks.equal(per_rank, want_rank, "num_tokens_per_rank")
    checks.equal(per_expert, want_expert, "num_tokens_per_expert")


def normal_mode(dtype):
    buf = Buffer(None, nvl_bytes(dtype))
    x, idx, w = inputs(RANK, dtype)
    check_layout(buf, idx)
    recv_x, recv_idx, recv_w, per_expert, handle, _ = buf.dispatch(x, topk_idx=idx, topk_weights=w,
                                                                   **layout(buf, idx))
    rows, ids, weights = [], [], []
    counts = [0] * E_PER_RANK
    for src, (sx, sidx, sw) in enumerate(everyone(dtype)):
        for t in range(sx.shape[0]):
            local = [e - RANK * E_PER_RANK if e >= 0 and owner(e) == RANK else -1
                     for e in sidx[t].tolist()]
            if any(l >= 0 for l in local):
                rows.append(sx[t])
                ids.append(local)
                # As in DeepEP: weights of experts that live elsewhere arrive as 0.
                weights.append(torch.where(torch.tensor(local) >= 0, sw[t], torch.zeros(K)))
                for l in local:
                    if l >= 0:
                        counts[l] += 1
    want_x = torch.stack(rows) if rows else torch.empty(0, H, dtype=dtype)
    checks.equal(recv_x, want_x, f"normal dispatch rows {dtype}")
    checks.equal(recv_idx, torch.tensor(ids, dtype=torch.long).view(-1, K), "recv_topk_idx")
    checks.equal(recv_w, torch.stack(weights) if weights else torch.empty(0, K), "recv_topk_weights")
    checks.true(per_expert == counts, f"num_recv_tokens_per_expert_list {per_expert} vs {counts}")
    # Each destination returns 2 * its row: token t gets 2 * x[t] * (ranks it went to).
    combined, _, _ = buf.combine((recv_x.float() * 2).to(dtype), handle)
    dests = torch.tensor([len({owner(e) for e in idx[t].tolist() if e >= 0})
                          for t in range(idx.shape[0])], dtype=torch.float32)
    checks.equal(combined, (x.float() * 2 * dests.view(-1, 1)).to(dtype), f"normal combine {dtype}")
    # The handle again (a cached dispatch) with other rows: they arrive where x's rows did.
    again, again_idx, again_w, _, _, _ = buf.dispatch((x.float() * 4).to(dtype), handle=handle)
    checks.equal(again, (recv_x.float() * 4).to(dtype), "reused handle: rows")
    checks.true(again_idx is None and again_w is None, "a cached dispatch carries no top-k")


def low_latency_mode():
    dtype = torch.bfloat16
    buf = Buffer(None, 0, 0, low_latency_mode=True)
    x, idx, w = inputs(RANK, dtype)
    recv_x, count, handle, _, _ = buf.low_latency_dispatch(x, idx, T_MAX, E, use_fp8=False)
    want_count = [0] * E_PER_RANK
    for src, (sx, sidx, _) in enumerate(everyone(dtype)):
        for t in range(sx.shape[0]):
            for e in sidx[t].tolist():
                if e >= 0 and owner(e) == RANK:
                    l = e - RANK * E_PER_RANK
                    checks.equal(recv_x[l, want_count[l]], sx[t], f"LL row expert {l} from {src}")
                    want_count[l] += 1
    checks.equal(count, torch.tensor(want_count, dtype=torch.int32), "LL recv_count")
    # Expert l returns (l + 1) * row; combine weights and sums over j in float32, rounds once.
    scale = torch.arange(1, E_PER_RANK + 1, dtype=torch.float32).view(-1, 1, 1)
    out = (recv_x.float() * scale).to(dtype)
    combined, _, _ = buf.low_latency_combine(out, idx, w, handle)
    want = torch.zeros(x.shape[0], H)
    for t in range(x.shape[0]):
        for j, e in enumerate(idx[t].tolist()):
            if e >= 0:
                want[t] += w[t, j] * x[t].float() * (e % E_PER_RANK + 1)
    checks.equal(combined, want.to(dtype), "LL combine")


def async_finish():
    """async_finish=True: calls queue on the buffer's stream and return an event; after
    current_stream_wait() the outputs equal the blocking calls' (shapes included), and two
    buffers' calls interleave as two-batch overlap issues them, an allreduce among them."""
    dtype = torch.bfloat16
    x, idx, w = inputs(RANK, dtype)
    sync = Buffer(None, nvl_bytes(dtype))
    want_x, want_idx, want_w, want_per_expert, handle, event = sync.dispatch(
        x, topk_idx=idx, topk_weights=w, **layout(sync, idx))
    event.current_stream_wait()  # a blocking call's event is already complete
    want_out, _, _ = sync.combine((want_x.float() * 3).to(dtype), handle)
    a, b = (Buffer(None, nvl_bytes(dtype)) for _ in range(2))
    ra = a.dispatch(x, topk_idx=idx, topk_weights=w, async_finish=True, **layout(a, idx))
    rb = b.dispatch(x[:2], topk_idx=idx[:2], topk_weights=w[:2], async_finish=True,
                    **layout(b, idx[:2]))
    total = torch.ones(3)
    dist.all_reduce(total)  # a collective between queued MoE calls keeps its place in the order
    checks.true(ra[0].shape[0] == N * T_MAX, "an async dispatch's rows are counted at the wait")
    ra[5].current_stream_wait()
    checks.equal(ra[0], want_x, "async dispatch rows")
    checks.equal(ra[1], want_idx, "async dispatch ids")
    checks.equal(ra[2], want_w, "async dispatch weights")
    checks.true(ra[3] == want_per_expert, "async per-expert counts (a list filled at the wait)")
    out_a, _, ev = a.combine((ra[0].float() * 3).to(dtype), ra[4], async_finish=True)
    rb[5].current_stream_wait()
    with ev:
        pass
    checks.equal(out_a, want_out, "async combine")
    out_b, _, ev = b.combine(rb[0], rb[4], async_finish=True)
    ev.current_stream_wait()
    checks.equal(total, torch.full((3,), float(N)), "allreduce among async MoE calls")
    dests = torch.tensor([len({owner(e) for e in idx[t].tolist() if e >= 0}) for t in range(2)],
                         dtype=torch.float32) if x.shape[0] else torch.empty(0)
    checks.equal(out_b, (x[:2].float() * dests.view(-1, 1)).to(dtype), "second buffer's combine")
    ll = Buffer(None, low_latency_mode=True)
    rx, count, h, ev, _ = ll.low_latency_dispatch(x, idx, T_MAX, E, use_fp8=False,
                                                  async_finish=True)
    ev.current_stream_wait()
    sx, scount, sh, _, _ = ll.low_latency_dispatch(x, idx, T_MAX, E, use_fp8=False)
    checks.equal(count, scount, "async low-latency counts")
    for l in range(E_PER_RANK):
        checks.equal(rx[l, :int(count[l])], sx[l, :int(count[l])], "async low-latency rows")
    out, ev, _ = ll.low_latency_combine(rx, idx, w, h, async_finish=True)
    ev.current_stream_wait()
    want, _, _ = ll.low_latency_combine(sx, idx, w, sh)
    checks.equal(out, want, "async low-latency combine")


def no_tokens_anywhere():
    """A step where no rank has a token: every rank receives no rows and combines an empty
    tensor (whose data pointer is NULL), blocking and queued."""
    buf = Buffer(None, nvl_bytes(torch.bfloat16))
    x, idx, w = torch.empty(0, H, dtype=torch.bfloat16), torch.empty(0, K, dtype=torch.long), \
        torch.empty(0, K)
    for async_finish in (False, True):
        recv_x, _, _, _, handle, event = buf.dispatch(x, topk_idx=idx, topk_weights=w,
                                                      async_finish=async_finish,
                                                      **layout(buf, idx))
        event.current_stream_wait()
        checks.true(recv_x.shape == (0, H), f"no rows received (async {async_finish})")
        out, _, event = buf.combine(recv_x, handle, async_finish=async_finish)
        event.current_stream_wait()
        checks.true(out.shape == (0, H), f"an empty combine (async {async_finish})")


def e4m3_to_float(b):
    """fp8 e4m3 bytes (bias 7, 3 mantissa bits, subnormals) to float32."""
    b = b.to(torch.int32)
    sign = torch.where(b >= 128, -1.0, 1.0)
    exp, man = (b >> 3) & 15, (b & 7).float()
    normal = (1 + man / 8) * torch.pow(2.0, (exp - 7).float())
    return sign * torch.where(exp == 0, man / 8 * 2.0 ** -6, normal)


def fp8_in_flight():
    """bfloat16 rows quantised to fp8 e4m3 in flight: uint8 rows with one float32 scale per 128
    columns, which dequantise to the sent rows within e4m3's precision (3 mantissa bits)."""
    buf = Buffer(None, nvl_bytes(torch.bfloat16))
    x, idx, w = inputs(RANK, torch.bfloat16)
    (rows, scales), _, _, _, _, _ = buf.dispatch(x, topk_idx=idx, topk_weights=w, use_fp8=True,
                                                 **layout(buf, idx))
    checks.true(rows.dtype == torch.uint8 and scales.dtype == torch.float32 and
                scales.shape == (rows.shape[0], H // 128), "fp8 rows and scales' types and shapes")
    sent = [sx[t] for sx, sidx, _ in everyone(torch.bfloat16) for t in range(sx.shape[0])
            if any(e >= 0 and owner(e) == RANK for e in sidx[t].tolist())]
    checks.true(len(sent) == rows.shape[0], "fp8: one row per (source, token)")
    if sent:
        back = e4m3_to_float(rows) * scales.repeat_interleave(128, dim=1)
        want = torch.stack(sent).float()
        checks.true(bool(((back - want).abs() <= want.abs() / 16 + 1e-6).all()),
                    "fp8 rows dequantise to the sent rows within 1/16")


def errors():
    try:
        Buffer(None, nvl_bytes(torch.bfloat16)).combine(torch.zeros(1, H, dtype=torch.bfloat16),
                                                        None)
        checks.true(False, "combine without a handle should raise")
    except (RuntimeError, TypeError, ValueError) as e:
        checks.true("handle" in str(e), f"combine without a handle names it: {e}")


def dropped_at_different_moments():
    """Python frees a Buffer whenever its last reference goes, at different moments on different
    ranks: rank 0 drops its buffer before an allreduce, the others after it. Nothing may pair
    the drop with a peer's call."""
    buf = Buffer(None, nvl_bytes(torch.bfloat16))
    x, idx, w = inputs(RANK, torch.bfloat16)
    buf.dispatch(x, topk_idx=idx, topk_weights=w, **layout(buf, idx))
    if RANK == 0:
        del buf
        gc.collect()
    total = torch.ones(4)
    dist.all_reduce(total)
    checks.equal(total, torch.full((4,), float(N)), "an allreduce beside a dropped Buffer")
    if RANK != 0:
        del buf
        gc.collect()
    again = Buffer(None, nvl_bytes(torch.bfloat16))
    _, _, _, per_expert, _, _ = again.dispatch(x, topk_idx=idx, topk_weights=w,
                                               **layout(again, idx))
    checks.true(len(per_expert) == E_PER_RANK, "a new Buffer after the drops works")


for dtype in (torch.bfloat16, torch.float32):
    normal_mode(dtype)
dropped_at_different_moments()
low_latency_mode()
async_finish()
no_tokens_anywhere()
fp8_in_flight()
errors()
dist.destroy_process_group()
sys.exit(checks.finish())
