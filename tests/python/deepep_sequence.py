"""A DeepEP program's calling sequence on stratacl.moe, with only the import line changed
(``import stratacl.moe as deep_ep``), every output checked element by element against a
reference built here from every rank's inputs (each rank's inputs come from a generator seeded
with its rank, so every rank can make everyone's).

Normal mode: get_dispatch_layout; dispatch of bfloat16 and of fp8 (rows, scales), with and
without top-k, blocking and queued (async_finish), with and without previous_event; the same
dispatch with num_worst_tokens; a cached dispatch of other values along the handle (what the
backward of a combine does); combine with the handle, with topk_weights (combined_topk_weights).
Low-latency mode: low_latency_dispatch with and without fp8, through the event or the receive
hook, with cumulative_local_expert_recv_stats; low_latency_combine into ``out``, with and without
zero_copy. Then: misspelt keywords raise TypeError, values StrataCL cannot honour raise
ValueError. Run under stratarun on 2 or 4 ranks (on 4, the last rank has no tokens).
"""
import sys

import torch
import torch.distributed as dist

from common import Checks, init, layout_reference
import stratacl.moe as deep_ep  # a DeepEP program has `import deep_ep` here

rank, num_ranks = init("deepep_sequence")
group = dist.group.WORLD
checks = Checks("deepep_sequence")

hidden, num_topk, num_local_experts = 256, 4, 3
num_experts = num_local_experts * num_ranks
num_max_dispatch_tokens_per_rank = 24  # low-latency mode


def owner(e):
    return e // num_local_experts


def make_inputs(r):
    """Rank r's tokens: bfloat16 rows, fp8 rows (random codes, NaN codes excluded, and scales),
    ids with -1 entries (one token chooses nothing), weights (random for normal mode, powers of
    two for low-latency mode, so that products are exact), and other rows for the cached
    dispatch."""
    g = torch.Generator().manual_seed(1234 + r)
    t = 0 if (num_ranks >= 4 and r == num_ranks - 1) else 9 + 4 * r
    scores = torch.rand(t, num_experts, generator=g) + 1
    idx = torch.topk(scores, num_topk, dim=-1, sorted=False)[1].to(deep_ep.topk_idx_t)
    idx[::5, num_topk - 1] = -1
    if t > 3:
        idx[3] = -1
    codes = torch.randint(0, 254, (t, hidden), generator=g, dtype=torch.int64)
    codes = (codes + (codes >= 127).long()).to(torch.uint8)  # skips 0x7f; 0xff is never drawn
    grad_codes = torch.randint(0, 127, (t, hidden), generator=g, dtype=torch.int64).to(torch.uint8)
    return {
        "x": torch.randn(t, hidden, generator=g).to(torch.bfloat16),
        "x_e4m3": (codes, torch.rand(t, hidden // 128, generator=g) + 0.5),
        "grad": torch.randn(t, hidden, generator=g).to(torch.bfloat16),
        "grad_e4m3": (grad_codes, torch.rand(t, hidden // 128, generator=g) + 0.5),
        "topk_idx": idx,
        "topk_weights": torch.randn(t, num_topk, generator=g),
        "ll_weights": 2.0 ** torch.randint(-2, 3, (t, num_topk), generator=g).float() *
        torch.where(torch.rand(t, num_topk, generator=g) < 0.3, -1.0, 1.0),
    }


everyone = [make_inputs(r) for r in range(num_ranks)]
mine = everyone[rank]
num_tokens = mine["x"].shape[0]


def e4m3_table():
    code = torch.arange(256)
    exp, man = (code >> 3) & 15, (code & 7).float()
    mag = torch.where(exp == 0, man / 8 * 2.0 ** -6, (1 + man / 8) * 2.0 ** (exp - 7).float())
    return torch.where(code >= 128, -mag, mag)


E4M3 = e4m3_table()


def cast_back(codes, scales):
    """fp8 rows and their scales to float32."""
    return E4M3[codes.long()] * scales.repeat_interleave(128, dim=-1)


def dests(r, t):
    return sorted({owner(e) for e in everyone[r]["topk_idx"][t].tolist() if e >= 0})


def received_here():
    """The (source rank, token) pairs this rank receives in normal mode, in order."""
    return [(r, t) for r in range(num_ranks) for t in range(everyone[r]["x"].shape[0])
            if rank in dests(r, t)]


def stack(rows, like, width):
    return torch.stack(rows) if rows else torch.empty(0, width, dtype=like.dtype)


def rows_of(name, pairs):
    """Rows of input `name` (a tensor or an fp8 tuple) for the (rank, token) pairs."""
    first = mine[name]
    if isinstance(first, tuple):
        return (stack([everyone[r][name][0][t] for r, t in pairs], first[0], hidden),
                stack([everyone[r][name][1][t] for r, t in pairs], first[1], hidden // 128))
    return stack([everyone[r][name][t] for r, t in pairs], first, hidden)


def equal(got, want, what):
    if isinstance(want, tuple):
        checks.true(isinstance(got, tuple) and len(got) == 2, f"{what}: a (rows, scales) tuple")
        if isinstance(got, tuple):
            checks.equal(got[0], want[0], what + " (fp8 rows)")
            checks.equal(got[1], want[1], what + " (scales)")
    else:
        checks.equal(got, want, what)


def expert_side(recv_x):
    """What this rank's experts return for received rows: (rank + 1) times the rows, bf16."""
    rows = cast_back(*recv_x) if isinstance(recv_x, tuple) else recv_x.float()
    return (rows.to(torch.bfloat16).float() * (rank + 1)).to(torch.bfloat16)


def check_layout(buffer):
    topk_idx = mine["topk_idx"]
    ref_num_tokens_per_rank, _, ref_num_tokens_per_expert, ref_is_token_in_rank, _ = \
        buffer.get_dispatch_layout(topk_idx, num_experts)
    in_rank, per_rank, per_expert = layout_reference(topk_idx, num_experts, num_ranks, owner)
    checks.equal(ref_is_token_in_rank, in_rank, "is_token_in_rank")
    checks.equal(ref_num_tokens_per_rank, per_rank, "num_tokens_per_rank")
    checks.equal(ref_num_tokens_per_expert, per_expert, "num_tokens_per_expert")
    return ref_num_tokens_per_rank, ref_num_tokens_per_expert, ref_is_token_in_rank


def test_normal_mode():
    num_nvl_bytes = int(1e7)
    buffer = deep_ep.Buffer(group, num_nvl_bytes, 0, low_latency_mode=False, num_qps_per_rank=1)
    num_tokens_per_rank, num_tokens_per_expert, is_token_in_rank = check_layout(buffer)
    config = deep_ep.Config(deep_ep.Buffer.num_sms, 8, 256)
    pairs = received_here()
    want_counts = [sum(1 for r, t in pairs
                       if rank * num_local_experts + i in everyone[r]["topk_idx"][t].tolist())
                   for i in range(num_local_experts)]
    want_idx = torch.tensor([[e - rank * num_local_experts if e >= 0 and owner(e) == rank else -1
                              for e in everyone[r]["topk_idx"][t].tolist()] for r, t in pairs],
                            dtype=torch.int64).view(-1, num_topk)
    want_weights = stack([torch.where(want_idx[i] >= 0, everyone[r]["topk_weights"][t],
                                      torch.zeros(num_topk)) for i, (r, t) in enumerate(pairs)],
                         torch.empty(0), num_topk)
    for previous_mode in (False, True):
        for async_mode in (False, True):
            for name in ("x", "x_e4m3"):
                current_x = mine[name]
                for with_topk in (False, True):
                    what = f"{name} topk={with_topk} async={async_mode} previous={previous_mode}"
                    dispatch_args = {"x": current_x, "num_tokens_per_rank": num_tokens_per_rank,
                                     "is_token_in_rank": is_token_in_rank,
                                     "num_tokens_per_expert": num_tokens_per_expert,
                                     "config": config, "async_finish": async_mode}
                    if with_topk:
                        dispatch_args.update({"topk_idx": mine["topk_idx"],
                                              "topk_weights": mine["topk_weights"]})
                    if previous_mode:
                        dispatch_args.update({"previous_event": buffer.capture()})
                    recv_x, recv_topk_idx, recv_topk_weights, recv_num_tokens_per_expert_list, \
                        handle, event = buffer.dispatch(**dispatch_args)
                    event.current_stream_wait() if async_mode else ()
                    equal(recv_x, rows_of(name, pairs), f"dispatch rows ({what})")
                    checks.true(recv_num_tokens_per_expert_list == want_counts,
                                f"per-expert counts {recv_num_tokens_per_expert_list} vs "
                                f"{want_counts} ({what})")
                    if with_topk:
                        checks.equal(recv_topk_idx, want_idx, f"recv_topk_idx ({what})")
                        checks.equal(recv_topk_weights, want_weights, f"recv_topk_weights ({what})")
                        # The same dispatch with num_worst_tokens: padded outputs, no counts.
                        num_worst_tokens = sum(e["x"].shape[0] for e in everyone)
                        dispatch_args.update({"num_worst_tokens": num_worst_tokens})
                        recv_worst_x, recv_worst_topk_idx, recv_worst_topk_weights, empty_list, \
                            _, event = buffer.dispatch(**dispatch_args)
                        event.current_stream_wait() if async_mode else ()
                        n = len(pairs)
                        worst_rows = recv_worst_x[0] if isinstance(recv_worst_x, tuple) \
                            else recv_worst_x
                        checks.true(empty_list == [] and worst_rows.shape[0] == num_worst_tokens
                                    and recv_worst_topk_idx.shape[0] == num_worst_tokens and
                                    recv_worst_topk_weights.shape[0] == num_worst_tokens,
                                    f"num_worst_tokens shapes ({what})")
                        equal(tuple(v[:n] for v in recv_worst_x) if isinstance(recv_worst_x, tuple)
                              else recv_worst_x[:n], recv_x, f"num_worst_tokens rows ({what})")
                        checks.equal(recv_worst_topk_idx[:n], want_idx, f"worst ids ({what})")
                        checks.true(bool((recv_worst_topk_idx[n:] == -1).all()),
                                    f"worst ids past the rows are -1 ({what})")
                        checks.equal(recv_worst_topk_weights[:n], want_weights,
                                     f"worst weights ({what})")
                    else:
                        checks.true(recv_topk_idx is None and recv_topk_weights is None,
                                    f"no top-k received without top-k ({what})")

                    # Cached dispatch (the backward of a combine): other values, same routing.
                    grad_name = "grad" if name == "x" else "grad_e4m3"
                    cached_args = {"x": mine[grad_name], "handle": handle, "config": config,
                                   "async_finish": async_mode}
                    if previous_mode:
                        cached_args.update({"previous_event": buffer.capture()})
                    recv_grad, none_idx, none_w, none_list, none_handle, event = \
                        buffer.dispatch(**cached_args)
                    event.current_stream_wait() if async_mode else ()
                    equal(recv_grad, rows_of(grad_name, pairs), f"cached dispatch ({what})")
                    checks.true(none_idx is None and none_w is None and none_list is None and
                                none_handle is None, f"a cached dispatch returns Nones ({what})")

                    # Combine with the handle: experts return (rank + 1) x their rows.
                    combine_args = {"x": expert_side(recv_x), "handle": handle, "config": config,
                                    "async_finish": async_mode}
                    if with_topk:
                        combine_args.update({"topk_weights": recv_topk_weights * (rank + 1)})
                    if previous_mode:
                        combine_args.update({"previous_event": buffer.capture()})
                    combined_x, combined_topk_weights, event = buffer.combine(**combine_args)
                    if async_mode:
                        with event:
                            pass
                    check_combine(name, combined_x, combined_topk_weights, with_topk, what)

    # expert_alignment rounds the counts up.
    _, _, _, aligned, _, _ = buffer.dispatch(
        mine["x"], topk_idx=mine["topk_idx"], topk_weights=mine["topk_weights"],
        num_tokens_per_rank=num_tokens_per_rank, is_token_in_rank=is_token_in_rank,
        num_tokens_per_expert=num_tokens_per_expert, expert_alignment=4)
    checks.true(aligned == [(c + 3) // 4 * 4 for c in want_counts], f"aligned counts {aligned}")


def check_combine(name, combined_x, combined_topk_weights, with_topk, what):
    """Per token: the sum over its destination ranks d, ascending, of what d's experts returned
    ((d + 1) x the row, in bf16), in float32 from the first term, rounded once; the weights the
    same way, each row's weights times (d + 1), 0 where the expert is not on d."""
    want_x = torch.zeros(num_tokens, hidden, dtype=torch.bfloat16)
    want_w = torch.zeros(num_tokens, num_topk)
    x = mine[name]
    rows = cast_back(*x) if isinstance(x, tuple) else x.float()
    for t in range(num_tokens):
        acc, acc_w = None, None
        for d in dests(rank, t):
            term = (rows[t].to(torch.bfloat16).float() * (d + 1)).to(torch.bfloat16).float()
            local = torch.tensor([e >= 0 and owner(e) == d for e in mine["topk_idx"][t].tolist()])
            term_w = torch.where(local, mine["topk_weights"][t], torch.zeros(num_topk)) * (d + 1)
            acc = term if acc is None else acc + term
            acc_w = term_w if acc_w is None else acc_w + term_w
        if acc is not None:
            want_x[t] = acc.to(torch.bfloat16)
            want_w[t] = acc_w
    checks.equal(combined_x, want_x, f"combined_x ({what})")
    if with_topk:
        checks.equal(combined_topk_weights, want_w, f"combined_topk_weights ({what})")
    else:
        checks.true(combined_topk_weights is None, f"no combined weights without them ({what})")


def test_low_latency_mode():
    num_rdma_bytes = deep_ep.Buffer.get_low_latency_rdma_size_hint(
        num_max_dispatch_tokens_per_rank, hidden, num_ranks, num_experts)
    buffer = deep_ep.Buffer(group, 0, num_rdma_bytes, low_latency_mode=True,
                            num_qps_per_rank=num_experts // num_ranks)
    x, topk_idx, topk_weights = mine["x"], mine["topk_idx"], mine["ll_weights"]
    # Per local expert, the (source rank, token) pairs that chose it, in order.
    chose = [[(r, t) for r in range(num_ranks) for t in range(everyone[r]["x"].shape[0])
              if rank * num_local_experts + i in everyone[r]["topk_idx"][t].tolist()]
             for i in range(num_local_experts)]
    for return_recv_hook in (False, True):
        for dispatch_use_fp8 in (False, True):
            what = f"hook={return_recv_hook} fp8={dispatch_use_fp8}"
            cumulative_local_expert_recv_stats = torch.zeros((num_local_experts,),
                                                             dtype=torch.int)
            packed_recv_x, packed_recv_count, handle, event, hook = \
                buffer.low_latency_dispatch(x, topk_idx, num_max_dispatch_tokens_per_rank,
                                            num_experts, use_fp8=dispatch_use_fp8,
                                            cumulative_local_expert_recv_stats=(
                                                cumulative_local_expert_recv_stats),
                                            async_finish=not return_recv_hook,
                                            return_recv_hook=return_recv_hook)
            hook() if return_recv_hook else event.current_stream_wait()
            want_count = torch.tensor([len(c) for c in chose], dtype=torch.int32)
            checks.equal(packed_recv_count, want_count, f"LL recv_count ({what})")
            checks.equal(cumulative_local_expert_recv_stats, want_count, f"LL stats ({what})")
            slots = num_ranks * num_max_dispatch_tokens_per_rank
            if dispatch_use_fp8:
                codes, scales = packed_recv_x
                checks.true(codes.dtype == torch.uint8 and
                            tuple(codes.shape) == (num_local_experts, slots, hidden) and
                            tuple(scales.shape) == (num_local_experts, slots, hidden // 128),
                            f"LL fp8 shapes ({what})")
                simulated_gemm_x = cast_back(codes, scales).to(torch.bfloat16)
            else:
                checks.true(tuple(packed_recv_x.shape) == (num_local_experts, slots, hidden),
                            f"LL shape ({what})")
                simulated_gemm_x = packed_recv_x.clone()
            for i in range(num_local_experts):
                want = rows_of("x", chose[i]).float()
                got = simulated_gemm_x[i, :len(chose[i])].float()
                if dispatch_use_fp8:  # within e4m3's precision (3 mantissa bits), each element
                    bound = want.abs() / 16 + want.abs() / 256 + 1e-3
                    checks.true(bool(((got - want).abs() <= bound).all()),
                                f"LL fp8 rows of expert {i} ({what})")
                else:
                    checks.equal(got, want, f"LL rows of expert {i} ({what})")
            for zero_copy in (False, True):
                if zero_copy:
                    buffer.get_next_low_latency_combine_buffer(handle)[:, :, :] = simulated_gemm_x
                out = torch.empty((num_tokens, hidden), dtype=torch.bfloat16)
                combined_x, event, hook = buffer.low_latency_combine(
                    simulated_gemm_x if not zero_copy else torch.empty(0), topk_idx,
                    topk_weights, handle, async_finish=not return_recv_hook, zero_copy=zero_copy,
                    return_recv_hook=return_recv_hook, out=out)
                hook() if return_recv_hook else event.current_stream_wait()
                checks.true(combined_x is out, f"LL combine wrote out ({what})")
                check_ll_combine(combined_x, dispatch_use_fp8, f"{what} zero_copy={zero_copy}")


def check_ll_combine(combined_x, fp8, what):
    """Per token: the sum over j ascending (id >= 0) of weight x its expert's row (the token's
    own row, as received), in float32, rounded once; weights are powers of two, so with bf16
    rows it is exact. fp8 rows: within their precision."""
    x, topk_idx, w = mine["x"].float(), mine["topk_idx"], mine["ll_weights"]
    want = torch.zeros(num_tokens, hidden)
    bound = torch.zeros(num_tokens, hidden)
    for t in range(num_tokens):
        acc = None
        for j in range(num_topk):
            if topk_idx[t, j] >= 0:
                term = w[t, j] * x[t]
                acc = term if acc is None else acc + term
                bound[t] += w[t, j].abs() * (x[t].abs() * (1 / 16 + 1 / 128) + 1e-3)
        if acc is not None:
            want[t] = acc
    if fp8:
        ok = ((combined_x.float() - want).abs() <= bound + want.abs() / 128).all()
        checks.true(bool(ok), f"LL combine within fp8 precision ({what})")
    else:
        checks.equal(combined_x, want.to(torch.bfloat16), f"LL combine ({what})")


def expect(error, call, what):
    try:
        call()
    except error as e:
        checks.true(True, what)
        return str(e)
    except Exception as e:  # noqa: BLE001
        checks.true(False, f"{what}: raised {type(e).__name__}: {e}")
        return ""
    checks.true(False, f"{what}: did not raise {error.__name__}")
    return ""


def test_arguments():
    """Misspelt keywords raise TypeError, and values StrataCL cannot honour ValueError, before
    any communication (so every rank can try them)."""
    buffer = deep_ep.Buffer(group, int(1e7))
    x, topk_idx, topk_weights = mine["x"], mine["topk_idx"], mine["topk_weights"]
    per_rank, _, per_expert, in_rank, _ = buffer.get_dispatch_layout(topk_idx, num_experts)
    layout = {"num_tokens_per_rank": per_rank, "is_token_in_rank": in_rank,
              "num_tokens_per_expert": per_expert}
    expect(TypeError, lambda: deep_ep.Buffer(group, num_nvl_byte=int(1e7)), "Buffer(num_nvl_byte)")
    expect(TypeError, lambda: buffer.get_dispatch_layout(topk_idx, num_experts, async_finsh=True),
           "get_dispatch_layout(async_finsh)")
    expect(TypeError, lambda: buffer.dispatch(x, topk_idx=topk_idx, topk_weight=topk_weights,
                                              **layout), "dispatch(topk_weight)")
    expect(TypeError, lambda: buffer.dispatch(x, topk_idx=topk_idx, async_finsh=True, **layout),
           "dispatch(async_finsh)")
    expect(TypeError, lambda: buffer.combine(x, None, topk_weight=topk_weights),
           "combine(topk_weight)")
    expect(TypeError, lambda: buffer.low_latency_dispatch(
        x, topk_idx, num_max_dispatch_tokens_per_rank, num_experts, use_fp=False),
        "low_latency_dispatch(use_fp)")
    expect(TypeError, lambda: buffer.low_latency_combine(x, topk_idx, topk_weights, None,
                                                         zero_cpy=True),
           "low_latency_combine(zero_cpy)")
    # Values that cannot be honoured.
    expect(ValueError, lambda: deep_ep.Buffer(group, int(1e7), enable_shrink=True),
           "enable_shrink=True")
    expect(ValueError, lambda: buffer.low_latency_dispatch(
        x, topk_idx, num_max_dispatch_tokens_per_rank, num_experts, round_scale=True),
        "round_scale=True")
    expect(ValueError, lambda: buffer.dispatch(x, topk_idx=topk_idx), "dispatch without layout")
    message = expect(TypeError, lambda: buffer.combine(x, None), "combine without a handle")
    checks.true("handle" in message, f"the error names the handle: {message}")
    expect(ValueError, lambda: deep_ep.Buffer(group, 0).dispatch(x, topk_idx=topk_idx, **layout),
           "a normal dispatch with num_nvl_bytes=0")
    # bias cannot be honoured: checked before the handle, so a blocking dispatch first.
    _, _, _, _, handle, _ = buffer.dispatch(x, topk_idx=topk_idx, **layout)
    expect(ValueError, lambda: buffer.combine(torch.empty(0, hidden, dtype=torch.bfloat16),
                                              handle, bias=x), "combine(bias=...)")
    expect(ValueError, lambda: buffer.dispatch(x, handle=handle, topk_idx=topk_idx),
           "a cached dispatch with topk_idx")
    # An event in DeepEP's other forms: a hook after the wait, release_handle in a with block.
    _, _, _, _, _, event = buffer.dispatch(x, topk_idx=topk_idx, async_finish=True, **layout)
    ran = []
    event.register_hook_after_wait(lambda: ran.append(True))
    with event(release_handle=True):
        pass
    checks.true(ran == [True] and event.event is None, "hook after wait, release_handle")


test_normal_mode()
test_low_latency_mode()
test_arguments()
dist.barrier()
dist.destroy_process_group()
sys.exit(checks.finish())
