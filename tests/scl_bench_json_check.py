#!/usr/bin/python3
"""Checks a JSON file of scl-bench (-J / --output_file / --json) with Python's json module:

    scl_bench_json_check.py FILE --collective C --ranks N --sizes MIN MAX FACTOR [--in-place]
                            [--mode M] [--program P] [--check-iters K]

The file must be strict JSON (no NaN or Infinity: a number that is not finite is written null),
hold a header and one row per measurement, every number finite or null; every size from MIN to
MAX (times FACTOR) must have an out-of-place row (and an in-place one with --in-place), each with
a positive time, and the correctness check must have passed: wrong == 0 in every row. Exits 1
naming the first problems found."""
import argparse
import json
import math
import sys


def reject_constant(name):
    raise ValueError(f"non-JSON number {name}")


def numbers(value, where):
    """Every number inside `value`, with where it is."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return
    if isinstance(value, (int, float)):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from numbers(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from numbers(v, f"{where}[{i}]")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--collective", required=True)
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--sizes", type=int, nargs=3, required=True, metavar=("MIN", "MAX", "FACTOR"))
    ap.add_argument("--in-place", action="store_true")
    ap.add_argument("--mode")
    ap.add_argument("--program")
    ap.add_argument("--check-iters", type=int, default=1)
    a = ap.parse_args()

    problems = []
    try:
        with open(a.file) as f:
            doc = json.load(f, parse_constant=reject_constant)
    except (OSError, ValueError) as e:
        print(f"FAIL: {a.file}: {e}")
        return 1

    if not isinstance(doc, dict) or not isinstance(doc.get("header"), dict) or \
            not isinstance(doc.get("rows"), list):
        print(f"FAIL: {a.file}: not an object with 'header' and 'rows'")
        return 1
    header, rows = doc["header"], doc["rows"]
    for where, v in numbers(doc, "$"):
        if isinstance(v, float) and not math.isfinite(v):
            problems.append(f"{where} is {v}")

    expect = {"tool": "scl-bench", "ranks": a.ranks, "check_iters": a.check_iters}
    if a.mode:
        expect["mode"] = a.mode
    if a.program:
        expect["program"] = a.program
    for key, want in expect.items():
        if header.get(key) != want:
            problems.append(f"header {key} = {header.get(key)!r}, want {want!r}")

    row_keys = {"collective", "dtype", "op", "root", "bytes", "count", "in_place", "mode",
                "time_us", "p99_us", "algbw_gbs", "busbw_gbs", "wrong"}
    seen = set()
    for i, row in enumerate(rows):
        missing = row_keys - set(row)
        if missing:
            problems.append(f"row {i} lacks {sorted(missing)}")
            continue
        if row["collective"] != a.collective:
            problems.append(f"row {i}: collective {row['collective']!r}")
        if row["wrong"] != 0:
            problems.append(f"row {i} ({row['bytes']} B, in_place {row['in_place']}): "
                            f"wrong = {row['wrong']!r}, the check did not pass")
        if not isinstance(row["time_us"], (int, float)) or not row["time_us"] > 0:
            problems.append(f"row {i}: time_us = {row['time_us']!r}")
        for key in ("p99_us", "algbw_gbs", "busbw_gbs"):
            if row[key] is not None and not isinstance(row[key], (int, float)):
                problems.append(f"row {i}: {key} = {row[key]!r}")
        seen.add((row["bytes"], row["in_place"]))

    lo, hi, factor = a.sizes
    size = lo
    while size <= hi:
        for in_place in ([False, True] if a.in_place else [False]):
            if (size, in_place) not in seen:
                problems.append(f"no row of {size} bytes, in_place {in_place}")
        size *= factor

    if problems:
        print(f"FAIL: {a.file}: " + "; ".join(problems[:10]) +
              (f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""))
        return 1
    print(f"{a.file}: valid JSON, {len(rows)} rows, every size present, check passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
