"""Continuous batching on one rank, and the router that places requests on ranks.

A step's batch: every running sequence that is decoding takes one token; then, when the step
allows prefill, sequences part-way through their prompt continue it and waiting requests join
(first come, first served) while a KV-cache slot and a running place are free, each taking what
is left of the step's token budget (chunked prefill). The step that processes a prompt's last
token yields its first output token; a sequence leaves when it has its output length.

Pure logic, no torch: the tests check its invariants directly.
"""
import collections
import dataclasses


@dataclasses.dataclass
class Request:
    id: int
    prompt: list  # token ids
    output_len: int  # tokens to generate, the first included
    sent: float = 0.0  # when it reached the engine (seconds from the run's start)
    slot: int = -1
    prefilled: int = 0
    output: list = dataclasses.field(default_factory=list)
    token_times: list = dataclasses.field(default_factory=list)  # one per output token
    hidden: object = None  # --check: the final hidden state of its last token

    @property
    def decoding(self):
        return self.prefilled == len(self.prompt)


@dataclasses.dataclass
class Chunk:
    """A sequence's part of a step: `tokens` from position `start`."""
    request: Request
    start: int
    tokens: list


class Scheduler:
    def __init__(self, max_num_seqs, max_num_batched_tokens, max_len):
        if max_num_batched_tokens < max_num_seqs:
            raise ValueError("max_num_batched_tokens must be at least max_num_seqs: every "
                             "running sequence decodes one token a step")
        self.max_num_seqs, self.budget, self.max_len = max_num_seqs, max_num_batched_tokens, max_len
        self.waiting = collections.deque()
        self.running = []
        self.free_slots = list(range(max_num_seqs - 1, -1, -1))
        self.finished = []

    @staticmethod
    def check(rid, prompt_len, output_len, max_len):
        """Raises ValueError for a request no scheduler could serve. The engine checks the whole
        load on every rank before it starts, so that all ranks fail together."""
        if prompt_len < 1 or output_len < 1:
            raise ValueError(f"request {rid}: empty prompt or output")
        if prompt_len + output_len > max_len:
            raise ValueError(f"request {rid}: {prompt_len} prompt + {output_len} output tokens "
                             f"exceed the model's max_len {max_len}")

    def add(self, request):
        self.check(request.id, len(request.prompt), request.output_len, self.max_len)
        self.waiting.append(request)

    def load(self):
        return len(self.waiting) + len(self.running)

    def wants_prefill(self):
        """Whether a step that allows prefill would schedule some."""
        return any(not r.decoding for r in self.running) or bool(
            self.waiting and self.free_slots)

    def schedule(self, allow_prefill):
        budget = self.budget
        batch = []
        for r in self.running:
            if r.decoding:
                batch.append(Chunk(r, len(r.prompt) + len(r.output) - 1, [r.output[-1]]))
                budget -= 1
        if not allow_prefill:
            return batch
        for r in self.running:
            if not r.decoding and budget > 0:
                batch.append(self._prefill(r, budget))
                budget -= len(batch[-1].tokens)
        while self.waiting and self.free_slots and budget > 0:
            r = self.waiting.popleft()
            r.slot = self.free_slots.pop()
            self.running.append(r)
            batch.append(self._prefill(r, budget))
            budget -= len(batch[-1].tokens)
        return batch

    @staticmethod
    def _prefill(r, budget):
        n = min(len(r.prompt) - r.prefilled, budget)
        return Chunk(r, r.prefilled, r.prompt[r.prefilled:r.prefilled + n])

    def commit(self, batch, next_tokens, now):
        """Takes the step's sampled tokens (one per chunk); returns the requests it finished."""
        done = []
        for chunk, token in zip(batch, next_tokens):
            r = chunk.request
            if not r.decoding:
                r.prefilled += len(chunk.tokens)
                if not r.decoding:
                    continue  # the prompt goes on next step: no token yet
            r.output.append(int(token))
            r.token_times.append(now)
            if len(r.output) == r.output_len:
                done.append(r)
        for r in done:
            self.running.remove(r)
            self.free_slots.append(r.slot)
        self.finished.extend(done)
        return done


def route(loads, count):
    """Ranks for `count` new requests: each to the least-loaded rank (the lowest on ties), its
    load counted as it goes. Every rank computes the same answer from the same loads."""
    loads = list(loads)
    placed = []
    for _ in range(count):
        r = min(range(len(loads)), key=lambda i: (loads[i], i))
        placed.append(r)
        loads[r] += 1
    return placed
