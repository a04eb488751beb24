"""The MoE exchange: send each token to the ranks of its experts, run them there, bring the
outputs back. One interface, three communication paths, the same math:

- `StrataclExchange`: stratacl.moe.Buffer, DeepEP's shape; receivers pull rows straight out of
  the senders' tensors (zero copy when they are in the StrataCL heap). Normal mode for prefill
  steps, low-latency mode for decode steps.
- `BufferedExchange`: the buffer-centric way, as CPU serving stacks write it on
  torch.distributed: pack the rows per destination rank, exchange the counts, all_to_all_single
  the packed rows, unpack; and back the same way. On a "stratacl" group over torch's own tensors
  it is the `buffered` path; on gloo the `gloo` path.

Both deliver the rows to the experts in the same order (source rank, then token) and sum in the
same order, so the paths agree bitwise (the engine's --check shows it).

`run(mode, layer, h)` returns the routed experts' output for this rank's tokens and adds the time
spent outside the experts (communication, packing) to `comm_s[mode]`.
"""
import time

import torch
import torch.distributed as dist

PREFILL, DECODE = "prefill", "decode"


def _e4m3_values():
    """The 256 fp8 e4m3 codes as float32 (bias 7, subnormals below exponent 1; 0x7f and 0xff
    are NaN)."""
    code = torch.arange(256)
    sign = torch.where(code >= 128, -1.0, 1.0)
    exp, man = (code >> 3) & 15, (code & 7).float()
    value = torch.where(exp == 0, man / 8 * 2.0 ** -6, (1 + man / 8) * 2.0 ** (exp - 7).float())
    value[(code & 127) == 127] = float("nan")
    return sign * value


E4M3 = _e4m3_values()


class Exchange:
    """What every path shares: `run` is one exchange, blocking, made of the three parts that
    two-batch overlap drives separately; `comm_s` the seconds spent outside the experts, per
    phase."""

    def __init__(self):
        self.comm_s = {PREFILL: 0.0, DECODE: 0.0}

    def run(self, mode, layer, h):
        state = self.start(mode, layer, h, 0, async_finish=False)
        self.middle(state)
        return self.finish(state)


class StrataclExchange(Exchange):
    """`run` does one exchange, blocking. Two-batch overlap splits it in three, so that a driver
    can compute one micro-batch while the other's calls are in flight: `start` queues the
    dispatch, `middle` waits for it, runs the experts and queues the combine, `finish` waits
    for that. Micro-batch i uses buffers of its own (waiting for one never waits for the
    other); the time counted is the time spent issuing and waiting."""

    def __init__(self, group, cfg, engine_cfg, dtype, micro_batches=1, fp8=False):
        super().__init__()
        from stratacl.moe import Buffer
        ranks = dist.get_world_size(group)
        # A normal dispatch passes at most num_nvl_bytes // (ranks * hidden bytes) tokens.
        nvl_bytes = ranks * engine_cfg.max_num_batched_tokens * cfg.hidden * \
            max(torch.empty((), dtype=dtype).element_size(), 2)
        self.normal = [Buffer(group, nvl_bytes) for _ in range(micro_batches)]
        self.low_latency = [Buffer(group, low_latency_mode=True) for _ in range(micro_batches)]
        self.dtype, self.fp8 = dtype, fp8
        self.experts, self.max_decode_tokens = cfg.experts, engine_cfg.max_num_seqs

    def _rows(self, x):
        """Received rows in the model's dtype: fp8 rows (uint8 codes, one float32 scale per 128
        columns) are dequantised; the time counts as the experts'."""
        if not isinstance(x, tuple):
            return x
        codes, scales = x
        return (E4M3[codes.long()] * scales.repeat_interleave(128, dim=-1)).to(self.dtype)

    def start(self, mode, layer, h, micro_batch, async_finish=True):
        idx, w = layer.route(h)
        t0 = time.perf_counter()
        if mode == PREFILL:
            buf = self.normal[micro_batch]
            per_rank, _, per_expert, in_rank, _ = buf.get_dispatch_layout(idx, self.experts)
            out = buf.dispatch(h, topk_idx=idx, topk_weights=w, num_tokens_per_rank=per_rank,
                               is_token_in_rank=in_rank, num_tokens_per_expert=per_expert,
                               async_finish=async_finish, use_fp8=self.fp8)
        else:
            buf = self.low_latency[micro_batch]
            out = buf.low_latency_dispatch(h, idx, self.max_decode_tokens, self.experts,
                                           use_fp8=self.fp8, async_finish=async_finish)
        self.comm_s[mode] += time.perf_counter() - t0
        return {"mode": mode, "layer": layer, "buf": buf, "idx": idx, "w": w, "out": out,
                "async": async_finish}

    def middle(self, state):
        mode, layer, buf, overlap = state["mode"], state["layer"], state["buf"], state["async"]
        t0 = time.perf_counter()
        if mode == PREFILL:
            x, recv_idx, recv_w, _, handle, event = state["out"]
            event.current_stream_wait()
            t1 = time.perf_counter()
            partial = layer.token_major(self._rows(x), recv_idx, recv_w)
            t2 = time.perf_counter()
            combined, _, event = buf.combine(partial, handle, async_finish=overlap)
        else:
            x, count, handle, event, _ = state["out"]
            event.current_stream_wait()
            t1 = time.perf_counter()
            codes = x[0] if isinstance(x, tuple) else x
            y = torch.empty(codes.shape, dtype=self.dtype)
            for e, c in enumerate(count.tolist()):
                if c:
                    rows = (x[0][e, :c], x[1][e, :c]) if isinstance(x, tuple) else x[e, :c]
                    y[e, :c] = layer.expert_major(e, self._rows(rows))
            t2 = time.perf_counter()
            combined, event, _ = buf.low_latency_combine(y, state["idx"], state["w"], handle,
                                                         async_finish=overlap)
        state["combined"], state["event"] = combined, event
        self.comm_s[mode] += (t1 - t0) + (time.perf_counter() - t2)

    def finish(self, state):
        t0 = time.perf_counter()
        state["event"].current_stream_wait()
        self.comm_s[state["mode"]] += time.perf_counter() - t0
        return state["combined"]


class BufferedExchange(Exchange):
    """The same three parts as StrataclExchange; with two-batch overlap the packed rows'
    all_to_all_single calls run with async_op."""

    def __init__(self, group, cfg, engine_cfg, dtype):
        super().__init__()
        self.group, self.dtype, self.k = group, dtype, cfg.topk
        self.nranks = dist.get_world_size(group)
        self.local = cfg.experts // self.nranks

    def _alltoall(self, rows, send_counts, recv_counts, async_op):
        """Rows to each rank by counts, as bytes (gloo has no bfloat16): (output, work)."""
        out = torch.empty(sum(recv_counts), rows.shape[1] * rows.element_size(),
                          dtype=torch.uint8)
        work = dist.all_to_all_single(out, rows.view(torch.uint8), recv_counts, send_counts,
                                      group=self.group, async_op=async_op)
        return out.view(rows.dtype), work

    def _counts(self, send):
        recv = torch.empty_like(send)
        dist.all_to_all_single(recv, send, group=self.group)
        return recv

    def start(self, mode, layer, h, micro_batch, async_finish=True):
        idx, w = layer.route(h)
        t0 = time.perf_counter()
        state = {"mode": mode, "layer": layer, "idx": idx, "w": w, "async": async_finish,
                 "tokens": h.shape[0], "hidden": h.shape[1]}
        (self._pack_token_major if mode == PREFILL else self._pack_expert_major)(state, h)
        self.comm_s[mode] += time.perf_counter() - t0
        return state

    def middle(self, state):
        t0 = time.perf_counter()
        if state["work"] is not None:
            state["work"].wait()
        if state["mode"] == PREFILL:
            k, wbytes, got = self.k, state["wbytes"], state["got"]
            recv_idx = got[:, :8 * k].contiguous().view(torch.int64)
            recv_w = got[:, 8 * k:8 * k + 4 * k].contiguous().view(torch.float32)
            recv_x = got[:, 8 * k + wbytes:].contiguous().view(self.dtype)
            t1 = time.perf_counter()
            out = state["layer"].token_major(recv_x, recv_idx, recv_w)
        else:
            got, rows = state["got"], state["rows"]
            t1 = time.perf_counter()
            out = torch.empty_like(got)
            for e in range(self.local):
                if len(rows[e]):
                    out[rows[e]] = state["layer"].expert_major(e, got[rows[e]])
        t2 = time.perf_counter()
        state["back"], state["work"] = self._alltoall(out, state["recv_counts"],
                                                      state["send_counts"], state["async"])
        self.comm_s[state["mode"]] += (t1 - t0) + (time.perf_counter() - t2)

    def finish(self, state):
        t0 = time.perf_counter()
        if state["work"] is not None:
            state["work"].wait()
        back = state["back"]
        if state["mode"] == PREFILL:
            # Per token, the sum over its destination ranks, ascending, in float32, starting from
            # the first term (as the library does: a sum of -0 stays -0).
            acc = torch.zeros(state["tokens"], state["hidden"])
            seen = torch.zeros(state["tokens"], dtype=torch.bool)
            off = 0
            for sel, n in zip(state["sels"], state["send_counts"]):
                rows = back[off:off + n].float()
                acc[sel] = torch.where(seen[sel, None], acc[sel] + rows, rows)
                seen[sel] = True
                off += n
        else:
            outs = torch.empty_like(back)
            outs[state["order"]] = back
            outs = outs.view(state["tokens"], self.k, state["hidden"])
            w = state["w"]
            # Per token, the sum over j ascending of w[j] * output, in float32.
            acc = w[:, 0:1] * outs[:, 0].float()
            for j in range(1, self.k):
                acc = acc + w[:, j:j + 1] * outs[:, j].float()
        out = acc.to(self.dtype)
        self.comm_s[state["mode"]] += time.perf_counter() - t0
        return out

    def _pack_token_major(self, state, h):
        """One row per (token, destination rank): k local expert ids (int64, -1 elsewhere), k
        weights (float32, 0 elsewhere, padded to 8 bytes), the row; counts, then rows."""
        R, k, idx, w = self.nranks, self.k, state["idx"], state["w"]
        owner = idx // self.local
        sels, ids, weights = [], [], []
        for r in range(R):
            sel = (owner == r).any(1).nonzero().squeeze(1)
            mine = owner[sel] == r
            sels.append(sel)
            ids.append(torch.where(mine, idx[sel] - r * self.local, torch.full_like(idx[sel], -1)))
            weights.append(torch.where(mine, w[sel], torch.zeros_like(w[sel])))
        sel = torch.cat(sels)
        wbytes = (4 * k + 7) // 8 * 8
        packed = torch.empty(len(sel), 8 * k + wbytes + h.shape[1] * h.element_size(),
                             dtype=torch.uint8)
        packed[:, :8 * k] = torch.cat(ids).view(torch.uint8)
        packed[:, 8 * k:8 * k + 4 * k] = torch.cat(weights).view(torch.uint8)
        packed[:, 8 * k + wbytes:] = h[sel].view(torch.uint8)
        send_counts = [len(s) for s in sels]
        recv_counts = self._counts(torch.tensor(send_counts)).tolist()
        got, work = self._alltoall(packed, send_counts, recv_counts, state["async"])
        state.update(sels=sels, wbytes=wbytes, got=got, work=work, send_counts=send_counts,
                     recv_counts=recv_counts)

    def _pack_expert_major(self, state, h):
        """One row per (token, expert), sorted by expert (so by destination rank), then token;
        counts per (destination, expert), then rows. The receiver gathers expert e's rows from
        each source in turn."""
        R, L, k, idx = self.nranks, self.local, self.k, state["idx"]
        flat = idx.flatten()
        order = torch.sort(flat, stable=True).indices
        send_counts_e = torch.bincount(flat, minlength=R * L)
        recv_counts_e = self._counts(send_counts_e).view(R, L)  # [source, local expert]
        send_counts = send_counts_e.view(R, L).sum(1).tolist()
        recv_counts = recv_counts_e.sum(1).tolist()
        got, work = self._alltoall(h[order // k], send_counts, recv_counts, state["async"])
        starts = torch.cat([torch.zeros(1, dtype=torch.long), recv_counts_e.flatten().cumsum(0)])
        rows = [torch.cat([torch.arange(starts[s * L + e], starts[s * L + e + 1])
                           for s in range(R)]) for e in range(L)]
        state.update(order=order, got=got, work=work, rows=rows, send_counts=send_counts,
                     recv_counts=recv_counts)


def make(path, cfg, engine_cfg, dtype, gloo_group=None, micro_batches=1, fp8=False):
    if path == "stratacl":
        return StrataclExchange(dist.group.WORLD, cfg, engine_cfg, dtype, micro_batches, fp8)
    if path == "buffered":
        return BufferedExchange(dist.group.WORLD, cfg, engine_cfg, dtype)
    if path == "gloo":
        return BufferedExchange(gloo_group, cfg, engine_cfg, dtype)
    raise ValueError(f"unknown communication path {path!r}")
