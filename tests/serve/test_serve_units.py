"""The serving engine's pure parts (workloads/serve): the scheduler's invariants under random
loads, the router, the load generator's arrivals and concurrency limit, and the metrics on a
case computed by hand. Run: python3 -m unittest discover tests/serve (with workloads/serve on
PYTHONPATH)."""
import math
import random
import unittest

import loadgen
import metrics
from scheduler import Request, Scheduler, route


class SchedulerInvariants(unittest.TestCase):
    def simulate(self, seed):
        rnd = random.Random(seed)
        seqs, budget = rnd.randint(1, 6), 0
        budget = rnd.randint(seqs, 3 * seqs + 20)
        sched = Scheduler(seqs, budget, max_len=200)
        n = rnd.randint(1, 40)
        arrive = sorted(rnd.randint(0, 60) for _ in range(n))
        reqs = [Request(i, [rnd.randrange(100) for _ in range(rnd.randint(1, 50))],
                        rnd.randint(1, 20)) for i in range(n)]
        added, step, fed = 0, 0, {i: 0 for i in range(n)}
        order = []
        while len(sched.finished) < n:
            self.assertLess(step, 10000, "the scheduler stopped making progress")
            while added < n and arrive[added] <= step:
                sched.add(reqs[added])
                added += 1
            allow = rnd.random() < 0.7 or not any(r.decoding for r in sched.running)
            batch = sched.schedule(allow_prefill=allow)
            # Budgets, limits and slots.
            self.assertLessEqual(sum(len(c.tokens) for c in batch), budget)
            self.assertLessEqual(len(sched.running), seqs)
            slots = [r.slot for r in sched.running]
            self.assertEqual(len(slots), len(set(slots)))
            self.assertTrue(all(0 <= s < seqs for s in slots))
            self.assertEqual(len({id(c.request) for c in batch}), len(batch))
            for c in batch:
                r = c.request
                self.assertLessEqual(arrive[r.id], step, "served before it arrived")
                if not r.decoding:
                    self.assertTrue(allow, "prefill in a step that did not allow it")
                    self.assertEqual(c.tokens, r.prompt[c.start:c.start + len(c.tokens)])
                    self.assertEqual(c.start, r.prefilled)
                else:
                    self.assertEqual(c.tokens, [r.output[-1]])
                    self.assertEqual(c.start, len(r.prompt) + len(r.output) - 1)
                fed[r.id] += len(c.tokens)
                if r.id not in order:
                    order.append(r.id)
            sched.commit(batch, [1000 + step] * len(batch), float(step))
            step += 1
        # Every request finished once, with its output length, admitted first come first served.
        self.assertEqual(sorted(r.id for r in sched.finished), list(range(n)))
        self.assertEqual(order, sorted(order))
        for r in reqs:
            self.assertEqual(len(r.output), r.output_len)
            self.assertEqual(len(r.token_times), r.output_len)
            self.assertEqual(fed[r.id], len(r.prompt) + r.output_len - 1, "a token fed twice")
            self.assertEqual(r.token_times, sorted(r.token_times))
        self.assertEqual(sched.load(), 0)
        self.assertEqual(sorted(sched.free_slots), list(range(seqs)))

    def test_random_loads(self):
        for seed in range(300):
            with self.subTest(seed=seed):
                self.simulate(seed)

    def test_refuses_what_cannot_fit(self):
        sched = Scheduler(2, 4, max_len=10)
        with self.assertRaises(ValueError):
            sched.add(Request(0, [1] * 8, 3))
        with self.assertRaises(ValueError):
            sched.add(Request(1, [], 3))
        with self.assertRaises(ValueError):
            Scheduler(4, 3, max_len=10)


class Router(unittest.TestCase):
    def test_least_loaded_lowest_on_ties(self):
        self.assertEqual(route([2, 0, 1], 4), [1, 1, 2, 0])
        self.assertEqual(route([0, 0], 3), [0, 1, 0])
        self.assertEqual(route([5], 0), [])


class Load(unittest.TestCase):
    def test_lengths_within_the_range(self):
        reqs = loadgen.make_requests(500, 100, 20, 0.5, 77, seed=3)
        self.assertTrue(all(50 <= len(p) <= 150 and 10 <= o <= 30 for p, o in reqs))
        self.assertTrue(all(0 <= t < 77 for p, _ in reqs for t in p))
        self.assertEqual(reqs, loadgen.make_requests(500, 100, 20, 0.5, 77, seed=3))
        fixed = loadgen.make_requests(20, 100, 20, 0.0, 77, seed=3)
        self.assertTrue(all(len(p) == 100 and o == 20 for p, o in fixed))

    def test_gamma_arrivals(self):
        for burstiness in (0.5, 1.0, 4.0):
            t = loadgen.arrival_times(20000, 8.0, burstiness, seed=1)
            gaps = [b - a for a, b in zip([0.0] + t, t)]
            mean = sum(gaps) / len(gaps)
            var = sum((g - mean) ** 2 for g in gaps) / len(gaps)
            self.assertAlmostEqual(mean, 1 / 8, delta=0.005)
            # A gamma of shape k has squared coefficient of variation 1 / k.
            self.assertAlmostEqual(var / mean ** 2, 1 / burstiness, delta=0.08 / burstiness)
        self.assertEqual(loadgen.arrival_times(5, math.inf, 1.0, 0), [0.0] * 5)

    def test_sender_honours_arrivals_and_the_limit(self):
        s = loadgen.Sender([0.0, 0.5, 0.6, 2.0], max_concurrency=2)
        self.assertEqual(s.release(0.1, finished=0), 1)
        self.assertEqual(s.release(0.55, finished=0), 2)
        self.assertEqual(s.release(0.7, finished=0), 2)  # two in flight: the third waits
        self.assertEqual(s.release(0.9, finished=1), 3)
        self.assertEqual(s.sent_times, [0.0, 0.5, 0.9])  # held back: its clock starts at 0.9
        self.assertEqual(s.next_arrival(), 2.0)
        self.assertEqual(s.release(2.5, finished=1), 3)
        self.assertEqual(s.release(2.5, finished=2), 4)
        self.assertEqual(s.sent_times[3], 2.5)
        # Several held back together all start their clocks when sent.
        burst = loadgen.Sender([0.0] * 4, max_concurrency=2)
        self.assertEqual(burst.release(0.0, finished=0), 2)
        self.assertEqual(burst.release(1.0, finished=0), 2)
        self.assertEqual(burst.release(2.0, finished=2), 4)
        self.assertEqual(burst.sent_times, [0.0, 0.0, 2.0, 2.0])
        free = loadgen.Sender([0.0, 1.0])
        self.assertEqual(free.release(0.5, 0), 1)
        self.assertEqual(free.release(3.0, 0), 2)
        self.assertEqual(free.sent_times, [0.0, 1.0])


class Metrics(unittest.TestCase):
    def test_a_case_by_hand(self):
        records = [{"sent": 0.0, "prompt_len": 10, "token_times": [0.1, 0.2, 0.4]},
                   {"sent": 1.0, "prompt_len": 6, "token_times": [1.3]}]
        res = metrics.compute(records, duration=2.0, percentiles=(50, 99),
                              goodput_slos={"ttft": 150})
        self.assertEqual(res["completed"], 2)
        self.assertEqual(res["total_input_tokens"], 16)
        self.assertEqual(res["total_output_tokens"], 4)
        self.assertAlmostEqual(res["request_throughput"], 1.0)
        self.assertAlmostEqual(res["output_throughput"], 2.0)
        self.assertAlmostEqual(res["total_token_throughput"], 10.0)
        self.assertAlmostEqual(res["request_goodput"], 0.5)  # only the first meets 150 ms
        self.assertAlmostEqual(res["mean_ttft_ms"], 200.0)
        self.assertAlmostEqual(res["median_ttft_ms"], 200.0)
        self.assertAlmostEqual(res["mean_tpot_ms"], 150.0)  # (0.4 - 0.1) / 2
        self.assertAlmostEqual(res["mean_itl_ms"], 150.0)  # gaps 0.1 and 0.2
        self.assertAlmostEqual(res["p50_itl_ms"], 150.0)
        self.assertAlmostEqual(res["mean_e2el_ms"], 350.0)
        self.assertIn("P99 TTFT (ms):", metrics.summary(res, (50, 99)))


if __name__ == "__main__":
    unittest.main()
