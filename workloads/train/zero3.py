"""ZeRO-3 sharding, written by hand (torch 1.13's FSDP refuses CPU-only training).

Each unit of the model (the embedding, each block, the head) keeps only its shard: 1/ranks of
its parameters, flattened, as the one parameter the optimizer sees. Forward, unit by unit: wait
for its all_gather (issued while the previous unit computed), issue the next unit's, compute,
free the gathered parameters (all but the last unit's, which backward needs next). Backward,
unit by unit in reverse: wait for its parameters' re-gather (issued while the following unit's
backward ran), issue the previous unit's, recompute nothing (autograd saved the activations),
backward, then reduce_scatter the gradient into the shard's, asynchronously; the step waits
for the reduce_scatters before the optimizer. Freeing is FSDP's: the gathered tensor's storage
shrinks to nothing and grows back for the re-gather, so the autograd graph that refers to it
stays valid.
"""
import torch
import torch.nn as nn
from torch.nn.utils.stateless import functional_call


class Unit:
    """One module's parameters as a flat shard, and its gathered full copy."""

    def __init__(self, module, comm):
        self.module, self.comm = module, comm
        self.names = [n for n, _ in module.named_parameters()]
        params = [p.detach() for _, p in module.named_parameters()]
        self.shapes = [p.shape for p in params]
        flat = torch.cat([p.flatten() for p in params])
        per = -(-flat.numel() // comm.size)
        padded = torch.zeros(per * comm.size)
        padded[:flat.numel()] = flat
        self.shard = nn.Parameter(padded[comm.rank * per:(comm.rank + 1) * per].clone())
        self.full = torch.empty(per * comm.size)
        self._free()
        self.gather_work = self.scatter_work = None
        for name in self.names:  # the module's own copies are gone: only views of `full` remain
            _delete(module, name)

    def _free(self):
        self.full.storage().resize_(0)

    def gather(self):
        if self.gather_work is None:
            self.full.storage().resize_(self.full.numel())
            self.gather_work = self.comm.all_gather(self.full, self.shard.detach(),
                                                    async_op=True)

    def wait_gather(self):
        self.gather()
        self.gather_work.wait()
        self.gather_work = None

    def params(self, full):
        views, off = {}, 0
        for name, shape in zip(self.names, self.shapes):
            n = shape.numel()
            views[name] = full[off:off + n].view(shape)
            off += n
        return views

    def scatter_grad(self, grad_full):
        self.shard.grad = torch.empty_like(self.shard)
        self.scatter_work = self.comm.reduce_scatter(self.shard.grad, grad_full, async_op=True)


def _delete(module, dotted):
    *path, leaf = dotted.split(".")
    for p in path:
        module = getattr(module, p)
    delattr(module, leaf)


class _Run(torch.autograd.Function):
    """Unit i's forward and backward around its gathered parameters; `x` is the unit's input
    (token ids for the first). The shard is an input so that autograd reaches every unit; its
    gradient arrives by reduce_scatter, not through autograd."""

    @staticmethod
    def forward(ctx, x, shard, units, i, last):
        unit = units[i]
        unit.wait_gather()
        if i + 1 < len(units):
            units[i + 1].gather()
        with torch.enable_grad():
            # The same memory under a version counter of its own: the re-gather writes it.
            full = torch.empty(0).set_(unit.full.storage(), 0, unit.full.shape)
            full.requires_grad_()
            inp = x.detach().requires_grad_(x.is_floating_point())
            out = functional_call(unit.module, unit.params(full), (inp,))
        if not last:
            unit._free()
        ctx.units, ctx.i, ctx.saved = units, i, (full, inp, out)
        return out.detach()

    @staticmethod
    def backward(ctx, grad):
        units, i = ctx.units, ctx.i
        full, inp, out = ctx.saved
        unit = units[i]
        if unit.gather_work is not None:  # re-gathered (the last unit was never freed)
            unit.wait_gather()
        if i > 0:
            units[i - 1].gather()
        torch.autograd.backward(out, grad)
        unit.scatter_grad(full.grad)
        unit._free()
        ctx.saved = None
        return (inp.grad if inp.requires_grad else None), None, None, None, None


class Zero3(nn.Module):
    """The model, sharded unit by unit (model.units); parameters() are the shards."""

    def __init__(self, model, comm):
        super().__init__()
        self.model = model
        self.units = [Unit(u, comm) for u in model.units]
        self.shards = nn.ParameterList([u.shard for u in self.units])

    def forward(self, tokens):
        self.units[0].gather()
        x = tokens
        for i in range(len(self.units)):
            x = _Run.apply(x, self.units[i].shard, self.units, i, i == len(self.units) - 1)
        return x

    def finish_grads(self):
        """Wait for the gradients' reduce_scatters; mean over the ranks, as DDP's."""
        for u in self.units:
            if u.scatter_work is not None:
                u.scatter_work.wait()
                u.scatter_work = None
                u.shard.grad.div_(u.comm.size)
