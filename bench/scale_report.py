"""The scale model's validation text (bench/scale_model.py, docs/SCALE-MODEL.md): the
calibration, every point measured against predicted, and the summary by layout and band."""
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))


def summary(rows, pick, use_fastest=False):
    errs = [100 * (r[5] - (r[4] if use_fastest else r[3])) / (r[4] if use_fastest else r[3])
            for r in rows if pick(r)]
    if not errs:
        return "no points"
    within = sum(abs(e) <= 25 for e in errs)
    return (f"{len(errs):3d} points, {within:3d} within 25% ({100 * within / len(errs):.0f}%), "
            f"median |error| {statistics.median(abs(e) for e in errs):.0f}%, "
            f"median error {statistics.median(errs):+.0f}%")


def report(rows, cal, out):
    out.append(f"Calibration ({cal['small']} points <= 512 B, {cal['large']} points >= 2 MiB of "
               f"{os.path.relpath(cal['path'], HERE)}): alpha = {cal['alpha']:.2f} us, "
               f"o = {cal['o']:.2f} us per message, beta (all hosts' bytes, one machine) = "
               f"{cal['beta']:.2f} GB/s (points {cal['beta_range'][0]:.2f}-"
               f"{cal['beta_range'][1]:.2f}), memcpy {cal['mem']:.1f} GB/s, link one stream "
               f"{cal['link']:.2f} GB/s; tau = {cal['tau']:.2f} us per wait and excess rank per "
               f"core (points under 256 KiB of {os.path.relpath(cal['tau_path'], HERE)})")
    out.append("")
    out.append("%-6s %-15s %10s %11s %11s %11s %8s  %s" % (
        "layout", "collective", "bytes", "measured", "fastest", "predicted", "error", "note"))
    for r in rows:
        out.append("%-6s %-15s %10d %11.1f %11.1f %11.1f %+7.0f%%  %s" % r)
    out.append("")
    out.append("measured: median of the repeats (us per call, slowest rank); fastest: the fastest "
               "repeat; error: (predicted - measured) / measured. note cal: the run alpha, o and "
               "beta were fitted on; tau: the run tau was fitted on (both in-sample); shared: more "
               "ranks than cores and under 256 KiB, where the turns tau counts weigh most.")
    out.append("")
    out.append("Summary")
    for lay in sorted({r[0] for r in rows}):
        out.append(f"  {lay:5s} all points:            " + summary(rows, lambda r: r[0] == lay))
        if any(r[0] == lay and r[7] == "shared" for r in rows):
            out.append(f"  {lay:5s} shared-core band:      "
                       + summary(rows, lambda r: r[0] == lay and r[7] == "shared"))
            out.append(f"  {lay:5s} outside the band:      "
                       + summary(rows, lambda r: r[0] == lay and r[7] != "shared"))
    val = [r for r in rows if r[7] not in ("cal", "tau")]
    if val:
        out.append("  validation (every run but the two fitted on):")
        out.append("        all points:            " + summary(val, lambda r: True))
        out.append("        shared-core band:      " + summary(val, lambda r: r[7] == "shared"))
        out.append("        outside the band:      " + summary(val, lambda r: r[7] != "shared"))
        out.append("        2 MiB and more:        " + summary(val, lambda r: r[2] >= 2 << 20))
        # The band's medians move with the launches' states (docs/PERFORMANCE.md, "Small calls'
        # launch states"); the fastest repeat shows how much of an error is that spread.
        out.append("        band, fastest repeat:  "
                   + summary(val, lambda r: r[7] == "shared", use_fastest=True))
