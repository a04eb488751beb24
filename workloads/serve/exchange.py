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


class StrataclExchange:
    """`run` does one exchange, blocking. Two-batch overlap splits it in three, so that a driver
    can compute one micro-batch while the other's calls are in flight: `start` queues the
    dispatch, `middle` waits for it, runs the experts and queues the combine, `finish` waits
    for that. Micro-batch i uses buffers of its own (waiting for one never waits for the
    other); the time counted is the time spent issuing and waiting."""

    def __init__(self, group, cfg, engine_cfg, dtype, micro_batches=1):
        from stratacl.moe import Buffer
        args = (group, cfg.hidden, cfg.experts, cfg.topk)
        self.normal = [Buffer(*args, engine_cfg.max_num_batched_tokens, x_dtype=dtype,
                              out_dtype=dtype) for _ in range(micro_batches)]
        self.low_latency = [Buffer(*args, engine_cfg.max_num_seqs, x_dtype=dtype,
                                   out_dtype=dtype, low_latency_mode=True)
                            for _ in range(micro_batches)]
        self.comm_s = {PREFILL: 0.0, DECODE: 0.0}

    def run(self, mode, layer, h):
        state = self.start(mode, layer, h, 0, async_finish=False)
        self.middle(state)
        return self.finish(state)

    def start(self, mode, layer, h, micro_batch, async_finish=True):
        idx, w = layer.route(h)
        t0 = time.perf_counter()
        if mode == PREFILL:
            buf = self.normal[micro_batch]
            out = buf.dispatch(h, topk_idx=idx, topk_weights=w, async_finish=async_finish)
        else:
            buf = self.low_latency[micro_batch]
            out = buf.low_latency_dispatch(h, idx, async_finish=async_finish)
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
            partial = layer.token_major(x, recv_idx, recv_w)
            t2 = time.perf_counter()
            combined, _, event = buf.combine(partial, handle, async_finish=overlap)
        else:
            x, count, handle, event, _ = state["out"]
            event.current_stream_wait()
            t1 = time.perf_counter()
            y = torch.empty_like(x)
            for e, c in enumerate(count.tolist()):
                if c:
                    y[e, :c] = layer.expert_major(e, x[e, :c])
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


class BufferedExchange:
    def __init__(self, group, cfg, engine_cfg, dtype):
        self.group, self.dtype, self.k = group, dtype, cfg.topk
        self.nranks = dist.get_world_size(group)
        self.local = cfg.experts // self.nranks
        self.comm_s = {PREFILL: 0.0, DECODE: 0.0}

    def _alltoall(self, rows, send_counts, recv_counts):
        """Rows to each rank by counts, as bytes (gloo has no bfloat16)."""
        out = torch.empty(sum(recv_counts), rows.shape[1] * rows.element_size(),
                          dtype=torch.uint8)
        dist.all_to_all_single(out, rows.view(torch.uint8), recv_counts, send_counts,
                               group=self.group)
        return out.view(rows.dtype)

    def _counts(self, send):
        recv = torch.empty_like(send)
        dist.all_to_all_single(recv, send, group=self.group)
        return recv

    def run(self, mode, layer, h):
        idx, w = layer.route(h)
        t0 = time.perf_counter()
        if mode == PREFILL:
            return self._token_major(layer, h, idx, w, t0)
        return self._expert_major(layer, h, idx, w, t0)

    def _token_major(self, layer, h, idx, w, t0):
        R, T, H, k = self.nranks, h.shape[0], h.shape[1], self.k
        owner = idx // self.local
        sels, metas = [], []
        for r in range(R):  # one row per (token, destination rank), local expert ids there
            sel = (owner == r).any(1).nonzero().squeeze(1)
            mine = owner[sel] == r
            local = torch.where(mine, idx[sel] - r * self.local, torch.full_like(idx[sel], -1))
            weights = torch.where(mine, w[sel], torch.zeros_like(w[sel]))
            sels.append(sel)
            metas.append((local, weights))
        send_counts = [len(s) for s in sels]
        sel = torch.cat(sels)
        # One packed row: k local ids (int64), k weights (float32, padded to 8 bytes), the row.
        wbytes = (4 * k + 7) // 8 * 8
        packed = torch.empty(len(sel), 8 * k + wbytes + H * h.element_size(), dtype=torch.uint8)
        packed[:, :8 * k] = torch.cat([m[0] for m in metas]).view(torch.uint8)
        packed[:, 8 * k:8 * k + 4 * k] = torch.cat([m[1] for m in metas]).view(torch.uint8)
        packed[:, 8 * k + wbytes:] = h[sel].view(torch.uint8)
        recv_counts = self._counts(torch.tensor(send_counts)).tolist()
        got = self._alltoall(packed, send_counts, recv_counts)
        recv_idx = got[:, :8 * k].contiguous().view(torch.int64)
        recv_w = got[:, 8 * k:8 * k + 4 * k].contiguous().view(torch.float32)
        recv_x = got[:, 8 * k + wbytes:].contiguous().view(self.dtype)
        t1 = time.perf_counter()
        partial = layer.token_major(recv_x, recv_idx, recv_w)
        t2 = time.perf_counter()
        back = self._alltoall(partial, recv_counts, send_counts)
        acc = torch.zeros(T, H)  # sum over destination ranks, ascending, in float32
        off = 0
        for r in range(R):
            acc[sels[r]] += back[off:off + send_counts[r]].float()
            off += send_counts[r]
        out = acc.to(self.dtype)
        self.comm_s["prefill"] += (t1 - t0) + (time.perf_counter() - t2)
        return out

    def _expert_major(self, layer, h, idx, w, t0):
        R, L, T, H, k = self.nranks, self.local, h.shape[0], h.shape[1], self.k
        # One row per (token, expert), sorted by expert (so by destination rank), then token.
        flat = idx.flatten()
        order = torch.sort(flat, stable=True).indices
        send_counts_e = torch.bincount(flat, minlength=R * L)
        recv_counts_e = self._counts(send_counts_e).view(R, L)  # [source, local expert]
        send_counts = send_counts_e.view(R, L).sum(1).tolist()
        recv_counts = recv_counts_e.sum(1).tolist()
        got = self._alltoall(h[order // k], send_counts, recv_counts)
        # Expert e's rows: from each source in turn, its block for e (tokens in order).
        starts = torch.cat([torch.zeros(1, dtype=torch.long), recv_counts_e.flatten().cumsum(0)])
        rows = [torch.cat([torch.arange(starts[s * L + e], starts[s * L + e + 1])
                           for s in range(R)]) for e in range(L)]
        t1 = time.perf_counter()
        y = torch.empty_like(got)
        for e in range(L):
            if len(rows[e]):
                y[rows[e]] = layer.expert_major(e, got[rows[e]])
        t2 = time.perf_counter()
        back = self._alltoall(y, recv_counts, send_counts)
        outs = torch.empty_like(back)
        outs[order] = back
        outs = outs.view(T, k, H)
        acc = torch.zeros(T, H)  # sum over j ascending of w[j] * output, in float32
        for j in range(k):
            acc += w[:, j:j + 1] * outs[:, j].float()
        out = acc.to(self.dtype)
        self.comm_s["decode"] += (t1 - t0) + (time.perf_counter() - t2)
        return out


def make(path, cfg, engine_cfg, dtype, gloo_group=None, micro_batches=1):
    if path == "stratacl":
        return StrataclExchange(dist.group.WORLD, cfg, engine_cfg, dtype, micro_batches)
    if path == "buffered":
        return BufferedExchange(dist.group.WORLD, cfg, engine_cfg, dtype)
    if path == "gloo":
        return BufferedExchange(gloo_group, cfg, engine_cfg, dtype)
    raise ValueError(f"unknown communication path {path!r}")
