"""Expert-parallel mixture of experts for training: dispatch and combine inside autograd.

The backward of a dispatch is a combine of the received rows' gradients; the backward of a
combine is a dispatch of the output's gradient; both reuse the forward's routing (its handle).

The router's weights must get gradients too, and they are applied where the experts run. So
they travel as extra columns of the dispatched rows (PAD columns, the first k of them the
token's weights), and their gradients come back the same way, as columns of the combined
gradient: one dispatch and one combine carry everything, in each direction.

Two exchanges give the same rows in the same order (source rank, then token; local expert ids,
-1 where the expert is elsewhere) and sum in the same order (per token, ascending rank, in
float32, starting from the first term), so the paths agree bitwise:
- `StrataclExchange`: stratacl.moe.Buffer, normal mode (receivers read rows in place).
- `BufferedExchange`: what a trainer writes on torch.distributed: pack the rows per
  destination with their expert ids, exchange the counts, all_to_all_single, unpack; back the
  same way.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

import gpt

PAD = 8  # extra columns: the router weights forward, their gradients backward


class StrataclExchange:
    def __init__(self, comm, hidden, experts, topk, max_tokens):
        """hidden: the rows' width; max_tokens: the most tokens a rank dispatches at once."""
        from stratacl.moe import Buffer
        self.comm, self.experts = comm, experts
        # A normal dispatch passes at most num_nvl_bytes // (ranks * hidden * 4) float32 rows.
        self.buf = Buffer(comm.group, comm.size * max_tokens * hidden * 4)

    def dispatch(self, x, idx):
        with self.comm.clock():
            per_rank, _, per_expert, in_rank, _ = self.buf.get_dispatch_layout(idx, self.experts)
            recv, recv_idx, _, _, handle, _ = self.buf.dispatch(
                x, topk_idx=idx, num_tokens_per_rank=per_rank, is_token_in_rank=in_rank,
                num_tokens_per_expert=per_expert)
        return recv, recv_idx, handle

    def dispatch_again(self, x, handle):
        with self.comm.clock():
            return self.buf.dispatch(x, handle=handle)[0]

    def combine(self, y, handle):
        with self.comm.clock():
            return self.buf.combine(y, handle)[0]


class BufferedExchange:
    def __init__(self, comm, experts, topk):
        self.comm, self.k = comm, topk
        self.local = experts // comm.size

    def _alltoall(self, rows, send, recv):
        out = rows.new_empty(sum(recv), rows.shape[1])
        self.comm.all_to_all(out, rows.contiguous(), recv, send)
        return out

    def dispatch(self, x, idx):
        with self.comm.clock():
            owner = idx // self.local
            sels, ids = [], []
            for r in range(self.comm.size):
                sel = (owner == r).any(1).nonzero().squeeze(1)
                sels.append(sel)
                ids.append(torch.where(owner[sel] == r, idx[sel] - r * self.local,
                                       torch.full_like(idx[sel], -1)))
            sel = torch.cat(sels)
            # The ids ride as float32 columns (their bits: the exchange only copies).
            packed = torch.cat([torch.cat(ids).view(torch.float32), x[sel]], 1)
            send = [len(s) for s in sels]
            recv_counts = torch.empty(self.comm.size, dtype=torch.long)
            self.comm.all_to_all(recv_counts, torch.tensor(send))
            recv = recv_counts.tolist()
            got = self._alltoall(packed, send, recv)
            handle = (sels, send, recv, x.shape[0])
            return (got[:, 2 * self.k:].contiguous(),
                    got[:, :2 * self.k].contiguous().view(torch.int64), handle)

    def dispatch_again(self, x, handle):
        sels, send, recv, _ = handle
        with self.comm.clock():
            return self._alltoall(x[torch.cat(sels)], send, recv)

    def combine(self, y, handle):
        sels, send, recv, tokens = handle
        with self.comm.clock():
            back = self._alltoall(y, recv, send)
            acc = y.new_zeros(tokens, y.shape[1])
            seen = torch.zeros(tokens, dtype=torch.bool)
            off = 0
            for sel, n in zip(sels, send):
                rows = back[off:off + n]
                acc[sel] = torch.where(seen[sel, None], acc[sel] + rows, rows)
                seen[sel] = True
                off += n
            return acc


class Dispatch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, idx, exchange, state):
        recv, recv_idx, state["handle"] = exchange.dispatch(x, idx)
        ctx.exchange, ctx.state = exchange, state
        ctx.mark_non_differentiable(recv_idx)
        return recv, recv_idx

    @staticmethod
    def backward(ctx, grad, _):
        return ctx.exchange.combine(grad.contiguous(), ctx.state["handle"]), None, None, None


class Combine(torch.autograd.Function):
    """`received` (the dispatch's output) ties the combine into the graph on every rank: a rank
    that received no rows computes an output that does not depend on them, yet must take part
    in the backward's dispatch and combine like the others."""

    @staticmethod
    def forward(ctx, y, received, exchange, state):
        ctx.exchange, ctx.state = exchange, state
        return exchange.combine(y.contiguous(), state["handle"])

    @staticmethod
    def backward(ctx, grad):
        return (ctx.exchange.dispatch_again(grad.contiguous(), ctx.state["handle"]), None, None,
                None)


def route(h, gate, topk):
    """Softmax router, top-k, weights renormalised over the k chosen: (weights, expert ids)."""
    w, idx = F.linear(h, gate).softmax(-1).topk(topk, dim=-1)
    return w / w.sum(-1, keepdim=True), idx


class MoE(nn.Module):
    """Routed GELU experts, `experts / ranks` of them on this rank (global ids rank * local +
    e); the gate is replicated. exchange=None computes every expert locally: the
    single-process reference.

    Each rank's loss is the mean over its own tokens, and DDP averages the replicated weights'
    gradients over the ranks. An expert's gradient arrives summed over every rank's tokens
    instead, so a hook divides it by the rank count: every gradient is the mean over the ranks,
    as one process computes it on the whole batch."""

    def __init__(self, cfg, seed, index, rank, size, exchange=None):
        super().__init__()
        d, name = cfg.width, f"block{index}.moe."
        if cfg.experts % size or cfg.topk > PAD:
            raise ValueError(f"experts: {cfg.experts} experts over {size} ranks, top-{cfg.topk}")
        self.k, self.local, self.exchange = cfg.topk, cfg.experts // size, exchange
        self.gate = gpt.weight(seed, name + "gate", (cfg.experts, d), 0.02)
        first = rank * self.local
        self.w1 = nn.Parameter(torch.stack([gpt.weight(seed, f"{name}{first + e}.w1",
                                                       (cfg.expert_inter, d), 0.02)
                                            for e in range(self.local)]))
        self.w2 = nn.Parameter(torch.stack([gpt.weight(seed, f"{name}{first + e}.w2",
                                                       (d, cfg.expert_inter), 0.02)
                                            for e in range(self.local)]))
        if exchange is not None and size > 1:
            for w in (self.w1, self.w2):
                w.register_hook(lambda g: g / size)

    def experts(self, x, idx, w):
        """Per row, the sum over its local experts (ascending) of weight times output."""
        y = x.new_zeros(x.shape)
        for e in range(self.local):
            rows, j = (idx == e).nonzero(as_tuple=True)
            if len(rows):
                out = F.linear(F.gelu(F.linear(x[rows], self.w1[e])), self.w2[e])
                y = y.index_add(0, rows, w[rows, j, None] * out)
        return y

    def forward(self, h):
        w, idx = route(h, self.gate, self.k)
        if self.exchange is None:
            return self.experts(h, idx, w)
        d = h.shape[1]
        state = {}
        recv, recv_idx = Dispatch.apply(torch.cat([h, F.pad(w, (0, PAD - self.k))], 1), idx,
                                        self.exchange, state)
        y = self.experts(recv[:, :d], recv_idx, recv[:, d:d + self.k])
        return Combine.apply(F.pad(y, (0, PAD)), recv, self.exchange, state)[:, :d]


def exchange(path, comm, cfg):
    if path == "stratacl":
        return StrataclExchange(comm, cfg.width + PAD, cfg.experts, cfg.topk,
                                cfg.batch * cfg.seq)
    return BufferedExchange(comm, cfg.experts, cfg.topk)
