"""The load: vLLM benchmark_serving's random dataset and arrival process, with its flag names.

- Prompt and output lengths are uniform in [len * (1 - range_ratio), len * (1 + range_ratio)];
  prompt tokens are uniform over the vocabulary.
- Inter-arrival times are gamma-distributed with shape `burstiness` and mean 1 / request_rate
  (burstiness 1 is a Poisson process; request_rate inf sends everything at once).
- With max_concurrency, a request that has arrived waits until fewer than that many are in
  flight; its time to first token counts from when it is sent, as vLLM counts it.
Everything is drawn from the seed.
"""
import math

import numpy as np


def sample_lengths(rng, n, length, range_ratio):
    lo, hi = max(1, int(length * (1 - range_ratio))), max(1, int(length * (1 + range_ratio)))
    return rng.integers(lo, hi + 1, size=n)


def make_requests(num_prompts, input_len, output_len, range_ratio, vocab, seed):
    """[(prompt token ids, output length)]."""
    rng = np.random.default_rng(seed)
    ins = sample_lengths(rng, num_prompts, input_len, range_ratio)
    outs = sample_lengths(rng, num_prompts, output_len, range_ratio)
    return [(rng.integers(0, vocab, size=int(i)).tolist(), int(o)) for i, o in zip(ins, outs)]


def arrival_times(num_prompts, request_rate, burstiness, seed):
    """Seconds from the start at which each request arrives."""
    if math.isinf(request_rate):
        return [0.0] * num_prompts
    if request_rate <= 0 or burstiness <= 0:
        raise ValueError("request_rate and burstiness must be positive")
    rng = np.random.default_rng(seed + 1)
    gaps = rng.gamma(shape=burstiness, scale=1.0 / (request_rate * burstiness), size=num_prompts)
    return np.cumsum(gaps).tolist()


class Sender:
    """Sends requests to the engine as they arrive, within max_concurrency. Called at step
    boundaries: requests held back by the limit are sent at the first boundary after places
    free, and their clocks start then (as vLLM's semaphore starts them). The engine learns of
    finished requests in the next step's state exchange, so a place freed by one step is filled
    at the start of the step after the next: under the limit, a step's worth of lag."""

    def __init__(self, arrivals, max_concurrency=None):
        self.arrivals, self.limit = arrivals, max_concurrency
        self.sent_times = []
        self.blocked_at = None  # the last time the limit held an arrived request back

    @property
    def sent(self):
        return len(self.sent_times)

    def release(self, now, finished):
        """Sends what has arrived by `now` and fits; returns how many are sent in all.
        `finished`: requests finished so far."""
        while self.sent < len(self.arrivals) and self.arrivals[self.sent] <= now:
            if self.limit is not None and self.sent - finished >= self.limit:
                self.blocked_at = now
                break
            held = self.blocked_at is not None and self.arrivals[self.sent] <= self.blocked_at
            self.sent_times.append(now if held else self.arrivals[self.sent])
        return self.sent

    def next_arrival(self):
        return self.arrivals[self.sent] if self.sent < len(self.arrivals) else None
