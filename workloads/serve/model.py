"""A DeepSeek-V3-shaped MoE decoder with random weights from a seed, and its KV cache.

Each layer: RMSNorm, multi-head attention over the sequence's KV cache, RMSNorm, then an FFN:
dense in the first `dense_layers`, after that a mixture of `experts` routed experts (softmax
gate, top-k, weights renormalised over the chosen k) plus one shared expert, every expert a
SwiGLU. The routed experts are spread over the ranks (expert parallelism); everything else is
replicated and runs on the rank that owns the request (attention data parallelism). The MoE
exchange is the engine's communication path (exchange.py); the expert side of it is here, so every
path computes the same math on the same rows.

Weights depend on the seed and the weight's name only, never on the rank count, so a run on 2
ranks and one on 4 serve the same model. The gate and the vocabulary head compute in float32, as
DeepSeek-V3's gate does. A row's result may depend on the rows that share its batch (float32
OpenBLAS products do), so the paths compare bitwise only on the same batches: every path cuts a
step into the same micro-batches. There is no positional encoding: it costs nothing that
matters to a communication benchmark.
"""
import math

import torch
import torch.nn.functional as F


def _weight(seed, name, shape, dtype, fan_in):
    g = torch.Generator().manual_seed(hash_name(seed, name))
    return (torch.randn(shape, generator=g) / math.sqrt(fan_in)).to(dtype)


def hash_name(seed, name):
    """A 63-bit seed from the run's seed and a weight's name (stable across processes, unlike
    Python's hash of a string)."""
    h = seed & 0xFFFFFFFF
    for ch in name.encode():
        h = (h * 1000003 + ch) & 0x7FFFFFFFFFFFFFFF
    return h


def rms_norm(x, eps=1e-6):
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


class Experts:
    """SwiGLU experts stacked in tensors: w1, w3 [n, H, I], w2 [n, I, H]."""

    def __init__(self, seed, prefix, ids, hidden, inter, dtype):
        def stack(tag, shape, fan_in):
            return torch.stack([_weight(seed, f"{prefix}.{e}.{tag}", shape, dtype, fan_in)
                                for e in ids]) if ids else torch.empty(0, *shape, dtype=dtype)
        self.w1 = stack("w1", (hidden, inter), hidden)
        self.w3 = stack("w3", (hidden, inter), hidden)
        self.w2 = stack("w2", (inter, hidden), inter)

    def __call__(self, i, x):
        return (F.silu(x @ self.w1[i]) * (x @ self.w3[i])) @ self.w2[i]


class MoeLayer:
    """Gate, this rank's routed experts, the shared expert. The expert side of the exchange is
    `token_major` (normal mode) and `expert_major` (low-latency mode)."""

    def __init__(self, seed, layer, cfg, rank, nranks, dtype):
        assert cfg.experts % nranks == 0, "experts must spread evenly over the ranks"
        self.k, self.local = cfg.topk, cfg.experts // nranks
        first = rank * self.local
        self.gate = _weight(seed, f"l{layer}.gate", (cfg.hidden, cfg.experts), torch.float32,
                            cfg.hidden)
        self.experts = Experts(seed, f"l{layer}.expert", list(range(first, first + self.local)),
                               cfg.hidden, cfg.expert_inter, dtype)
        self.shared = Experts(seed, f"l{layer}.shared", [0], cfg.hidden, cfg.expert_inter, dtype)

    def route(self, h):
        """topk_idx [T, k] int64 and topk_weights [T, k] float32."""
        scores = torch.softmax(h.float() @ self.gate, dim=-1)
        w, idx = torch.topk(scores, self.k, dim=-1)
        return idx, w / w.sum(-1, keepdim=True)

    def token_major(self, x, idx, w):
        """Normal mode: per received row, the sum over j ascending of w[j] * expert_idx[j](row),
        over this rank's experts (idx -1 elsewhere), in float32, rounded once."""
        rows = x.shape[0]
        out = torch.empty(rows, self.k, x.shape[1], dtype=x.dtype)
        for e in range(self.local):
            hit = idx == e
            sel = hit.any(1).nonzero().squeeze(1)
            if sel.numel():
                out[sel, hit[sel].int().argmax(1)] = self.experts(e, x[sel])
        acc = torch.zeros(rows, x.shape[1])
        for j in range(self.k):
            valid = (idx[:, j] >= 0).nonzero().squeeze(1)
            acc[valid] += w[valid, j:j + 1] * out[valid, j].float()
        return acc.to(x.dtype)

    def expert_major(self, e, x):
        """Low-latency mode: expert e's output for its rows (weighted by the token's owner)."""
        return self.experts(e, x)


class Model:
    def __init__(self, cfg, seed, rank, nranks, dtype, kv_slots):
        self.cfg, self.dtype = cfg, dtype
        H, A = cfg.hidden, cfg.heads * cfg.head_dim
        self.embed = _weight(seed, "embed", (cfg.vocab, H), dtype, 1)
        self.head = _weight(seed, "head", (H, cfg.vocab), dtype, H)
        self.attn, self.ffn = [], []
        for l in range(cfg.layers):
            self.attn.append({n: _weight(seed, f"l{l}.{n}", (H, A) if n != "wo" else (A, H), dtype,
                                         H if n != "wo" else A) for n in ("wq", "wk", "wv", "wo")})
            self.ffn.append(Experts(seed, f"l{l}.dense", [0], H, cfg.dense_inter, dtype)
                            if l < cfg.dense_layers else MoeLayer(seed, l, cfg, rank, nranks, dtype))
        # One KV-cache slot per running sequence, per layer: keys [slots, heads, head_dim,
        # max_len] (transposed: scores are then a plain product, twice as fast in bfloat16),
        # values [slots, heads, max_len, head_dim].
        n, d = cfg.heads, cfg.head_dim
        self.k_cache = [torch.zeros(kv_slots, n, d, cfg.max_len, dtype=dtype)
                        for _ in range(cfg.layers)]
        self.v_cache = [torch.zeros(kv_slots, n, cfg.max_len, d, dtype=dtype)
                        for _ in range(cfg.layers)]

    def forward(self, seqs, moe):
        """seqs: [(kv slot, first position, token ids)] of this rank's batch; moe(layer, h) runs
        the MoE exchange (every rank calls it, even with no tokens). Returns the final hidden
        states [T, H] and the next token of each sequence (greedy)."""
        steps = self.forward_steps(seqs)
        try:
            request = next(steps)
            while True:
                request = steps.send(moe(*request))
        except StopIteration as done:
            return done.value

    def forward_steps(self, seqs):
        """The forward pass as a generator, so that a driver can interleave two micro-batches:
        it yields (layer, h) at each MoE layer, takes the routed experts' output back, and
        returns what forward returns."""
        cfg = self.cfg
        tokens = torch.cat([t for _, _, t in seqs]) if seqs else torch.empty(0, dtype=torch.long)
        x = self.embed[tokens]
        for l in range(cfg.layers):
            x = x + self._attention(l, rms_norm(x), seqs)
            h = rms_norm(x)
            if l < cfg.dense_layers:
                x = x + self.ffn[l](0, h)
            else:
                routed = yield self.ffn[l], h
                x = x + self.ffn[l].shared(0, h) + routed
        x = rms_norm(x)
        if not seqs:
            return x, torch.empty(0, dtype=torch.long)
        last = torch.tensor([len(t) for _, _, t in seqs]).cumsum(0) - 1
        logits = x[last].float() @ self.head.float()
        return x, logits.argmax(-1)

    def _attention(self, l, h, seqs):
        cfg, w = self.cfg, self.attn[l]
        n, d = cfg.heads, cfg.head_dim
        q, k, v = h @ w["wq"], h @ w["wk"], h @ w["wv"]
        out = torch.empty_like(q)
        rows = torch.tensor([len(t) for _, _, t in seqs], dtype=torch.long).cumsum(0)
        one = [i for i, (_, _, t) in enumerate(seqs) if len(t) == 1]
        if one:
            self._decode_attention(l, q, k, v, out, [seqs[i] for i in one], rows[one] - 1)
        off = 0
        for slot, start, toks in seqs:  # prompt chunks, one sequence at a time
            c = len(toks)
            if c > 1:
                end = start + c
                kc, vc = self.k_cache[l][slot], self.v_cache[l][slot]
                kc[:, :, start:end] = k[off:off + c].view(c, n, d).permute(1, 2, 0)
                vc[:, start:end] = v[off:off + c].view(c, n, d).transpose(0, 1)
                qs = q[off:off + c].view(c, n, d).transpose(0, 1)
                s = (qs @ kc[:, :, :end]).float() / math.sqrt(d)
                # Causal within the chunk: query i sees positions up to start + i.
                s.masked_fill_(torch.arange(end) > torch.arange(start, end)[:, None], -math.inf)
                p = torch.softmax(s, dim=-1).to(h.dtype)
                out[off:off + c] = (p @ vc[:, :end]).transpose(0, 1).reshape(c, -1)
            off += c
        return out @ w["wo"]

    def _decode_attention(self, l, q, k, v, out, seqs, at):
        """One token per sequence: every KV slot at once, up to the longest, masked per slot."""
        n, d = self.cfg.heads, self.cfg.head_dim
        slots = torch.tensor([s for s, _, _ in seqs])
        pos = torch.tensor([p for _, p, _ in seqs])
        self.k_cache[l][slots, :, :, pos] = k[at].view(-1, n, d)
        self.v_cache[l][slots, :, pos] = v[at].view(-1, n, d)
        end = int(pos.max()) + 1
        S = self.k_cache[l].shape[0]
        qs = torch.zeros(S, n, 1, d, dtype=q.dtype)
        qs[slots] = q[at].view(-1, n, 1, d)
        keys = self.k_cache[l][:, :, :, :end].view(S * n, d, end)
        s = torch.bmm(qs.view(S * n, 1, d), keys).view(S, n, 1, end).float() / math.sqrt(d)
        last = torch.full((S,), -1, dtype=torch.long)
        last[slots] = pos
        s.masked_fill_((torch.arange(end) > last[:, None])[:, None, None, :], -math.inf)
        s[last < 0] = 0.0  # idle slots: anything finite
        p = torch.softmax(s, dim=-1).to(q.dtype)
        values = self.v_cache[l][:, :, :end].view(S * n, end, d)
        o = torch.bmm(p.view(S * n, 1, end), values).view(S, n, d)
        out[at] = o[slots].reshape(len(seqs), -1)
