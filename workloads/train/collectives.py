"""Megatron's tensor-parallel pair, as autograd functions: where a layer's input enters the
column-parallel weights, `CopyToParallel` (identity forward, sum of the ranks' input gradients
backward); where the row-parallel weights' partial outputs leave, `ReduceFromParallel` (sum
forward, identity backward). Both sums are allreduces through a `comm.Comm`, on the critical
path: nothing else can run while they are in flight."""
import torch


class CopyToParallel(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, comm):
        ctx.comm = comm
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        return ctx.comm.all_reduce(grad.contiguous()), None


class ReduceFromParallel(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, comm):
        if not x.is_contiguous():
            return comm.all_reduce(x.contiguous())
        ctx.mark_dirty(x)  # summed in place, as Megatron does: autograd must know
        return comm.all_reduce(x)

    @staticmethod
    def backward(ctx, grad):
        return grad, None
