"""A DLRM-style recommender: embedding tables model-parallel, MLPs data-parallel, as
facebookresearch/dlrm distributes it.

Each rank owns whole tables (table t on rank t mod ranks) and looks them up for the whole global
batch; the pooled embeddings then go through an all-to-all so that each rank gets every table's
vectors for its own slice of the samples. The all-to-all runs while the bottom MLP computes the
dense features. Backward sends the embeddings' gradients back the same way: a hook issues that
all-to-all as soon as autograd has the gradient, the bottom MLP's backward runs meanwhile, and
the tables' sparse gradients are computed after it lands.

Tables are `EmbeddingBag(mode="sum", sparse=True)`, updated sparsely by SGD. Losses are means
over each rank's samples and DDP averages the MLPs' gradients, so a table's gradient (summed
over the ranks that used it) is divided by the rank count: every gradient is the global
batch's mean, as in one process.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from config import generator as _seeded


def _mlp(sizes, seed, name, last_relu):
    layers = []
    for i, (m, n) in enumerate(zip(sizes, sizes[1:])):
        lin = nn.Linear(m, n)
        g = _seeded(seed, f"{name}{i}")
        with torch.no_grad():  # DLRM's: normal weights of variance 2 / (in + out)
            lin.weight.copy_(torch.randn(n, m, generator=g) * (2 / (m + n)) ** 0.5)
            lin.bias.copy_(torch.randn(n, generator=g) * (1 / n) ** 0.5)
        layers += [lin, nn.ReLU()]
    return nn.Sequential(*(layers if last_relu else layers[:-1]))


class DLRM(nn.Module):
    """This rank's tables and the (replicated) MLPs. The interaction takes the tables in the
    order the all-to-all delivers them: by owning rank, then table (`owned`); one process
    (ranks = 1) takes them in table order, so a reference permutes its pooled embeddings."""

    def __init__(self, cfg, seed, rank, size):
        super().__init__()
        if cfg.batch % size:
            raise ValueError(f"dlrm: a global batch of {cfg.batch} does not split over {size} "
                             "ranks")
        if cfg.tables < size:
            raise ValueError(f"dlrm: {cfg.tables} tables cannot give each of {size} ranks one")
        self.cfg, self.size = cfg, size
        self.owned = [[t for t in range(cfg.tables) if t % size == r] for r in range(size)]
        self.mine = self.owned[rank]
        self.tables = nn.ModuleList()
        for t in self.mine:
            bag = nn.EmbeddingBag(cfg.rows, cfg.dim, mode="sum", sparse=True)
            bound = cfg.rows ** -0.5
            with torch.no_grad():
                bag.weight.copy_(torch.rand(cfg.rows, cfg.dim, generator=_seeded(seed, f"t{t}"))
                                 * 2 * bound - bound)
            self.tables.append(bag)
        self.bottom = _mlp((cfg.dense_features, *cfg.bottom), seed, "bottom", last_relu=True)
        pairs = (cfg.tables + 1) * cfg.tables // 2
        self.top = _mlp((cfg.bottom[-1] + pairs, *cfg.top), seed, "top", last_relu=False)

    def lookup(self, indices):
        """[global batch, my tables, dim]: each bag's rows summed."""
        return torch.stack([bag(ix) for bag, ix in zip(self.tables, indices)], 1)

    def predict(self, x, emb, top=None):
        """Dot interaction of the bottom MLP's output x [b, dim] with the embeddings
        [b, tables, dim], then the top MLP (or `top`, its DDP wrapper): logits [b]."""
        z = torch.cat([x[:, None], emb], 1)
        dots = z @ z.transpose(1, 2)
        i, j = torch.tril_indices(z.shape[1], z.shape[1], offset=-1)
        return (top or self.top)(torch.cat([x, dots[:, i, j]], 1)).squeeze(1)


def batch(cfg, seed, step, tables, lo, hi):
    """Criteo-shaped random data: dense features and labels of samples [lo, hi), and the
    indices [global batch, lookups] of the given tables."""
    g = _seeded(seed, f"dense{step}")
    dense = torch.rand(cfg.batch, cfg.dense_features, generator=g)[lo:hi]
    labels = torch.randint(0, 2, (cfg.batch,), generator=g).float()[lo:hi]
    indices = [torch.randint(0, cfg.rows, (cfg.batch, cfg.lookups),
                             generator=_seeded(seed, f"sparse{step}.{t}")) for t in tables]
    return dense, labels, indices


class EmbeddingExchange:
    """The pooled embeddings' all-to-all, forward and backward, through a comm.Comm."""

    def __init__(self, model, comm):
        self.model, self.comm = model, comm
        self.local = model.cfg.batch // comm.size
        d = model.cfg.dim
        self.send_split = [self.local * len(model.mine) * d] * comm.size
        self.recv_split = [self.local * len(o) * d for o in model.owned]
        self.back = None

    def start(self, pooled):
        """Issue the exchange of `pooled` [global batch, my tables, dim] (rows by sample, so
        each destination's slice is contiguous)."""
        self.recv = pooled.new_empty(sum(self.recv_split))
        return self.comm.all_to_all(self.recv, pooled.detach().reshape(-1), self.recv_split,
                                    self.send_split, async_op=True)

    def received(self, pooled):
        """After the wait: every table's vectors for this rank's samples, [local, tables, dim],
        a leaf whose gradient, when autograd has it, starts the way back."""
        d, parts = self.model.cfg.dim, self.recv.split(self.recv_split)
        emb = torch.cat([p.view(self.local, -1, d) for p in parts], 1).requires_grad_()
        emb.register_hook(lambda grad: self._back(grad, pooled))
        return emb

    def _back(self, grad, pooled):
        """Each table's gradient to its owner, scaled to the global mean; issued, not waited."""
        cols = [len(o) for o in self.model.owned]
        send = torch.cat([g.reshape(-1) for g in grad.split(cols, 1)]) / self.comm.size
        out = pooled.new_empty(pooled.numel())
        self.back = (self.comm.all_to_all(out, send, self.send_split, self.recv_split,
                                          async_op=True), out, pooled)

    def finish_backward(self):
        """Wait for the gradients and run the tables' backward (sparse gradients)."""
        work, out, pooled = self.back
        self.back = None
        work.wait()
        n, d = self.comm.size, self.model.cfg.dim
        grad = out.view(n, self.local, -1, d).reshape(pooled.shape)
        pooled.backward(grad)


def loss_fn(logits, labels):
    return F.binary_cross_entropy_with_logits(logits, labels)
