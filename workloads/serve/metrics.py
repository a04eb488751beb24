"""vLLM benchmark_serving's results: the same key names in the JSON, the same summary block.

TTFT counts from when a request was sent (so the engine's queueing counts); TPOT is a request's
time after its first token over its other tokens; ITL the gaps between its tokens; E2EL from
sent to its last token. Goodput counts the requests that meet every SLO given.
"""
import numpy as np

LATENCIES = {"ttft": "Time to First Token", "tpot": "Time per Output Token (excl. 1st token)",
             "itl": "Inter-token Latency", "e2el": "End-to-end Latency"}
NAMES = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2el": "E2EL"}


def compute(records, duration, percentiles=(99,), goodput_slos=None):
    """records: [{"sent", "prompt_len", "token_times"}], times in seconds."""
    samples = {"ttft": [], "tpot": [], "itl": [], "e2el": []}
    good = 0
    for r in records:
        t = r["token_times"]
        ttft, e2el = t[0] - r["sent"], t[-1] - r["sent"]
        tpot = (t[-1] - t[0]) / (len(t) - 1) if len(t) > 1 else 0.0
        samples["ttft"].append(ttft)
        samples["e2el"].append(e2el)
        if len(t) > 1:
            samples["tpot"].append(tpot)
        samples["itl"].extend(np.diff(t).tolist())
        slo = goodput_slos or {}
        if all({"ttft": ttft, "tpot": tpot, "e2el": e2el}[k] * 1000 <= v for k, v in slo.items()):
            good += 1
    out_tokens = sum(len(r["token_times"]) for r in records)
    in_tokens = sum(r["prompt_len"] for r in records)
    res = {
        "duration": duration,
        "completed": len(records),
        "total_input_tokens": in_tokens,
        "total_output_tokens": out_tokens,
        "request_throughput": len(records) / duration,
        "request_goodput": good / duration if goodput_slos else None,
        "output_throughput": out_tokens / duration,
        "total_token_throughput": (in_tokens + out_tokens) / duration,
    }
    for key, values in samples.items():
        ms = np.array(values or [0.0]) * 1000
        res[f"mean_{key}_ms"] = float(ms.mean())
        res[f"median_{key}_ms"] = float(np.median(ms))
        res[f"std_{key}_ms"] = float(ms.std())
        for p in percentiles:
            res[f"p{p:g}_{key}_ms"] = float(np.percentile(ms, p))
    res["ttfts"] = [x for x in samples["ttft"]]
    return res


def summary(res, percentiles=(99,), title="Serving Benchmark Result"):
    """The summary block, as vLLM prints it."""
    lines = [f"{' ' + title + ' ':=^50}"]

    def row(label, value, fmt="{:<10.2f}"):
        lines.append(f"{label:<40}" + (fmt.format(value) if value is not None else "n/a"))

    row("Successful requests:", res["completed"], "{:<10}")
    row("Benchmark duration (s):", res["duration"])
    row("Total input tokens:", res["total_input_tokens"], "{:<10}")
    row("Total generated tokens:", res["total_output_tokens"], "{:<10}")
    row("Request throughput (req/s):", res["request_throughput"])
    if res["request_goodput"] is not None:
        row("Request goodput (req/s):", res["request_goodput"])
    row("Output token throughput (tok/s):", res["output_throughput"])
    row("Total Token throughput (tok/s):", res["total_token_throughput"])
    for key, title_ in LATENCIES.items():
        lines.append(f"{title_:-^50}")
        row(f"Mean {NAMES[key]} (ms):", res[f"mean_{key}_ms"])
        row(f"Median {NAMES[key]} (ms):", res[f"median_{key}_ms"])
        for p in percentiles:
            row(f"P{p:g} {NAMES[key]} (ms):", res[f"p{p:g}_{key}_ms"])
    if "comm_share" in res:
        lines.append(f"{'Communication':-^50}")
        for phase in ("prefill", "decode"):
            share = res["comm_share"].get(phase)
            row(f"{phase.capitalize()} steps:", res["steps"].get(phase, 0), "{:<10}")
            row(f"{phase.capitalize()} step mean (ms):", res["step_ms"].get(phase))
            row(f"{phase.capitalize()} communication share (%):",
                None if share is None else 100 * share)
    lines.append("=" * 50)
    return "\n".join(lines)
