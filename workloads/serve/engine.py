"""The serving loop of one rank: attention data-parallel, MoE expert-parallel, in lock step.

Each step begins with a small all_gather of every rank's state (its load, whether it wants to
prefill, how many requests it finished) and rank 0's count of requests sent so far. From that,
every rank routes the newly sent requests alike (scheduler.route), and picks the step's mode
alike: prefill (normal-mode MoE exchange) when any rank prefills, else decode (low-latency).
Then each rank runs its own batch through the model; every rank takes part in every MoE
exchange, with no tokens if it has none. When no rank has work, rank 0 sleeps until the next
arrival while the others wait in the next step's all_gather.

With two-batch overlap, each rank cuts its batch in two micro-batches of about equal tokens and
interleaves them layer by layer: one micro-batch's attention and experts run while the other's
dispatch or combine is in flight (each exchange's start/middle/finish). Every path cuts the
same way, so the paths still compute the same rows in the same batches.
"""
import time

import torch
import torch.distributed as dist

from exchange import DECODE, PREFILL
from scheduler import Request, Scheduler, route


class Engine:
    def __init__(self, model, exchange, engine_cfg, group, keep_hidden=False, overlap=False):
        self.model, self.exchange, self.group = model, exchange, group
        self.overlap = overlap
        self.rank, self.nranks = dist.get_rank(group), dist.get_world_size(group)
        self.cfg = engine_cfg
        self.keep_hidden = keep_hidden  # --check: each request's final hidden state
        self.steps = []  # (mode, seconds, communication seconds) of this rank's steps

    def _moe(self, mode):
        return lambda layer, h: self.exchange.run(mode, layer, h)

    def _forward(self, mode, seqs):
        if not self.overlap:
            return self.model.forward(seqs, self._moe(mode))
        # The first micro-batch ends with the sequence whose tokens reach half the batch's.
        sizes = torch.tensor([len(t) for _, _, t in seqs], dtype=torch.long).cumsum(0)
        cut = int((sizes < (sizes[-1] + 1) // 2).sum()) + 1 if seqs else 0
        ex, parts = self.exchange, (seqs[:cut], seqs[cut:])
        steps = [self.model.forward_steps(p) for p in parts]
        results = [None, None]

        def advance(i, routed):  # micro-batch i computes up to its next MoE layer, and starts it
            try:
                layer, h = steps[i].send(routed)
            except StopIteration as done:
                results[i] = done.value
                return None
            return ex.start(mode, layer, h, i)

        states = [advance(0, None), advance(1, None)]
        while states[0] is not None:  # both micro-batches cross the same MoE layers
            ex.middle(states[0])
            ex.middle(states[1])
            states = [advance(i, ex.finish(states[i])) for i in (0, 1)]
        return tuple(torch.cat([results[0][j], results[1][j]]) for j in (0, 1))

    def _state(self, sched, sent, finished):
        mine = torch.tensor([sched.load(), int(sched.wants_prefill()), len(sched.free_slots),
                             finished, sent], dtype=torch.int64)
        everyone = [torch.empty_like(mine) for _ in range(self.nranks)]
        dist.all_gather(everyone, mine, group=self.group)
        return torch.stack(everyone).tolist()

    def serve(self, workload, sender, progress=None):
        """workload: [(prompt, output_len)]; sender: rank 0's loadgen.Sender (None elsewhere).
        Returns this rank's finished Requests; token times are seconds from the common start."""
        sched = Scheduler(self.cfg.max_num_seqs, self.cfg.max_num_batched_tokens,
                          self.model.cfg.max_len)
        for i, (prompt, out_len) in enumerate(workload):
            Scheduler.check(i, len(prompt), out_len, self.model.cfg.max_len)
        dist.barrier(group=self.group)
        start = time.perf_counter()
        routed, finished_all, after_idle = 0, 0, False
        while True:
            t_step = time.perf_counter()
            now = t_step - start
            sent = sender.release(now, finished_all) if sender else 0
            state = self._state(sched, sent, len(sched.finished))
            t_state = time.perf_counter()
            if after_idle:  # that all_gather waited out the idle time: not communication
                t_step, after_idle = t_state, False
            sent = state[0][4]
            finished_all = sum(s[3] for s in state)
            placed = route([s[0] for s in state], sent - routed)
            for i, r in enumerate(placed):
                if r == self.rank:
                    prompt, out_len = workload[routed + i]
                    sched.add(Request(routed + i, prompt, out_len))
            prefill = any(s[1] for s in state) or any(state[r][2] > 0 for r in placed)
            if not placed and all(s[0] == 0 for s in state):
                if sent == len(workload):
                    break
                if sender:  # nothing to do anywhere until the next arrival
                    time.sleep(max(0.0, sender.next_arrival() - (time.perf_counter() - start)))
                routed, after_idle = sent, True
                continue
            routed = sent
            mode = PREFILL if prefill else DECODE
            batch = sched.schedule(allow_prefill=prefill)
            comm_before = self.exchange.comm_s[mode]
            seqs = [(c.request.slot, c.start, torch.tensor(c.tokens)) for c in batch]
            hidden, tokens = self._forward(mode, seqs)
            sched.commit(batch, tokens.tolist(), time.perf_counter() - start)
            if self.keep_hidden:
                last = torch.tensor([len(c.tokens) for c in batch]).cumsum(0) - 1
                for c, row in zip(batch, last.tolist()):
                    c.request.hidden = hidden[row].clone()
            t_end = time.perf_counter()
            comm = self.exchange.comm_s[mode] - comm_before + (t_state - t_step)
            self.steps.append((mode, t_end - t_step, comm))
            if progress:
                progress(finished_all, len(workload))
        return sched.finished
