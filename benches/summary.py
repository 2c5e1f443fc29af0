#!/usr/bin/env python3
"""Markdown tables for docs/benchmarks.md from the criterion results of benches/allreduce.rs.

    cargo bench --bench allreduce
    python3 benches/summary.py [CRITERION_DIR]      # default: target/criterion

Reads CRITERION_DIR/allreduce_p2/<algorithm>/<bytes>/new/{benchmark,estimates}.json and
CRITERION_DIR/op_sum_f64/<kernel>/<bytes>/new/..., and prints:

- allreduce_p2: one row per size, one column per algorithm and the limit kernel, each cell
  the median time of one call; then "best" (the fastest algorithm, Auto and the limit kernel
  excluded), "auto/best" (Auto's median over the best one's) and "direct % of limit" (the
  direct algorithm's throughput as a percentage of the limit kernel's, i.e. limit time over
  direct time);
- op_sum_f64: per size, the built-in Sum fold and the plain loop, and the fold's throughput
  as a percentage of the loop's;
- the allreduce goals (docs/benchmarks.md), each with the figure it is judged by;
- the time span over which the results were written, since criterion keeps the results of
  benchmarks that a later run skipped (delete target/criterion/allreduce_p2 before a full run).

Only the standard library is used.
"""

import datetime
import json
import sys
from pathlib import Path

# Column order: the algorithms in the order of `Algorithm` (src/select.rs), then the limit.
ORDER = [
    "auto",
    "linear",
    "chain",
    "binomial",
    "recursive-doubling",
    "rabenseifner",
    "ring",
    "pipelined-tree",
    "dual-root",
    "two-tree",
    "direct",
    "limit",
]

# Names that are not concrete algorithms, hence not candidates for "best".
NOT_ALGORITHMS = {"auto", "limit"}


def load(group_dir):
    """{(function id, bytes): median ns} of one criterion group, and the files' mtimes."""
    results, mtimes = {}, []
    for estimates in sorted(group_dir.glob("*/*/new/estimates.json")):
        new = estimates.parent
        try:
            bench = json.loads((new / "benchmark.json").read_text())
            name, value = bench["function_id"], bench["value_str"]
        except (OSError, KeyError, ValueError):
            name, value = new.parent.parent.name, new.parent.name
        try:
            size = int(value)
        except ValueError:
            continue
        median = json.loads(estimates.read_text())["median"]["point_estimate"]
        results[(name, size)] = median
        mtimes.append(estimates.stat().st_mtime)
    return results, mtimes


def fmt_time(ns):
    """A duration in ns with 3 significant digits and a unit."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def fmt_size(b):
    """A byte count as B, KiB or MiB."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= scale and b % scale == 0:
            return f"{b // scale} {unit}"
    return f"{b} B"


def columns(results):
    """Function ids present, in ORDER first, any others after in name order."""
    names = {n for n, _ in results}
    return [n for n in ORDER if n in names] + sorted(names - set(ORDER))


def table(header, rows):
    """A markdown table."""
    out = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def allreduce_table(results):
    """The allreduce_p2 table and the per-size figures the goals are judged by."""
    names = columns(results)
    sizes = sorted({s for _, s in results})
    rows, figures = [], {}
    for size in sizes:
        t = {n: results.get((n, size)) for n in names}
        candidates = [(v, n) for n, v in t.items() if v is not None and n not in NOT_ALGORITHMS]
        best = min(candidates) if candidates else None
        auto_ratio = t.get("auto") / best[0] if best and t.get("auto") else None
        direct_pct = (
            100 * t["limit"] / t["direct"] if t.get("limit") and t.get("direct") else None
        )
        figures[size] = (t, best, auto_ratio, direct_pct)
        rows.append(
            [fmt_size(size)]
            + [fmt_time(t[n]) if t[n] is not None else "—" for n in names]
            + [
                best[1] if best else "—",
                f"{auto_ratio:.2f}" if auto_ratio else "—",
                f"{direct_pct:.0f} %" if direct_pct else "—",
            ]
        )
    header = ["size per rank"] + names + ["best", "auto/best", "direct % of limit"]
    return table(header, rows), figures


def op_table(results):
    """The op_sum_f64 table and {bytes: fold % of loop}."""
    rows, pct = [], {}
    for size in sorted({s for _, s in results}):
        fold, plain = results.get(("sum_fold", size)), results.get(("plain_loop", size))
        if fold and plain:
            pct[size] = 100 * plain / fold
        rows.append(
            [
                fmt_size(size),
                fmt_time(fold) if fold else "—",
                fmt_time(plain) if plain else "—",
                f"{pct[size]:.0f} %" if size in pct else "—",
            ]
        )
    header = ["size", "`Sum` fold_right", "plain loop", "fold % of loop"]
    return table(header, rows), pct


def goals(figures, sum_pct):
    """The allreduce goals with the measured figure and whether each is met."""
    rows = []

    def row(goal, measured, met):
        rows.append([goal, measured, "—" if met is None else ("yes" if met else "no")])

    if 8 in figures:
        t, best, _, _ = figures[8]
        auto = t.get("auto")
        text = f"auto {fmt_time(auto)}" if auto else "auto not measured"
        if best:
            text += f"; best {best[1]} {fmt_time(best[0])}"
        row("8-byte allreduce ≤ 120 ns median", text, auto <= 120 if auto else None)
    else:
        row("8-byte allreduce ≤ 120 ns median", "not measured", None)

    big = {s: f[3] for s, f in figures.items() if s >= 256 << 10 and f[3] is not None}
    if big:
        worst = min(big, key=big.get)
        row(
            "`Direct` ≥ 80 % of the limit kernel's throughput from 256 KiB up",
            f"lowest {big[worst]:.0f} % (at {fmt_size(worst)})",
            big[worst] >= 80,
        )
    else:
        row("`Direct` ≥ 80 % of the limit kernel's throughput from 256 KiB up", "not measured", None)

    ratios = {s: f[2] for s, f in figures.items() if f[2] is not None}
    if ratios:
        worst = max(ratios, key=ratios.get)
        row(
            "Auto ≤ 1.25 × the best algorithm at every size",
            f"highest {ratios[worst]:.2f} (at {fmt_size(worst)}, best {figures[worst][1][1]})",
            ratios[worst] <= 1.25,
        )
    else:
        row("Auto ≤ 1.25 × the best algorithm at every size", "not measured", None)

    if sum_pct:
        worst = min(sum_pct, key=sum_pct.get)
        row(
            "`Sum` of f64 slices ≥ 80 % of a plain `a += b` loop",
            f"lowest {sum_pct[worst]:.0f} % (at {fmt_size(worst)})",
            sum_pct[worst] >= 80,
        )
    else:
        row("`Sum` of f64 slices ≥ 80 % of a plain `a += b` loop", "not measured", None)
    return table(["goal", "measured (medians)", "met"], rows)


def main():
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
    allreduce, t1 = load(root / "allreduce_p2")
    ops, t2 = load(root / "op_sum_f64")
    if not allreduce and not ops:
        sys.exit(f"no results under {root}/allreduce_p2 or {root}/op_sum_f64; run "
                 "`cargo bench --bench allreduce` first")
    mtimes = t1 + t2
    span = [datetime.datetime.fromtimestamp(t, datetime.timezone.utc) for t in (min(mtimes), max(mtimes))]
    print(f"<!-- results written {span[0]:%Y-%m-%d %H:%M} to {span[1]:%Y-%m-%d %H:%M} UTC -->\n")
    text, figures = allreduce_table(allreduce)
    print("### allreduce, 2 ranks, f64 Sum: median time per call\n")
    print(text)
    text, sum_pct = op_table(ops)
    print("\n### `Sum` fold of f64 slices against a plain loop (one thread): median time\n")
    print(text)
    print("\n### Goals\n")
    print(goals(figures, sum_pct))


if __name__ == "__main__":
    main()
