#!/usr/bin/env python3
"""Merges whole sweeps of corecoll-bench (--json) taken on one rank count into one result
file for `corecoll-bench --tune`: a cell's median is the median of the runs' medians (the
mean of the two middle ones for an even count), its min the smallest, its p95 the largest,
its iterations the sum; it passes only if it passed in every run. Cells measured in only some
runs are kept with what those runs have.

Why: one sweep's medians at a size can be off by 2x for minutes on this 2-core VM (a bimodal
p = 2 latency at 8-512 B, 8-16 MiB on 8 oversubscribed ranks), and the tuner then switches
algorithms for one size; a cell that is slow in one run of two or three is outvoted.

    corecoll-bench/scripts/merge_runs.py OUT.json RUN1.json RUN2.json [...]
"""
import json
import statistics
import sys

KEY = ("collective", "algorithm", "source", "scope", "placement", "ranks", "dtype", "op", "bytes")


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    out, runs = sys.argv[1], [json.load(open(p)) for p in sys.argv[2:]]
    cells = {}
    order = []
    for run in runs:
        for rec in run["records"]:
            k = tuple(rec.get(f) for f in KEY)
            if k not in cells:
                cells[k] = []
                order.append(k)
            cells[k].append(rec)
    merged = []
    for k in order:
        recs = cells[k]
        m = dict(recs[0])
        ok = [r for r in recs if r.get("median_us") is not None]
        if ok:
            m["median_us"] = statistics.median(r["median_us"] for r in ok)
            m["min_us"] = min(r["min_us"] for r in ok)
            m["p95_us"] = max(r["p95_us"] for r in ok)
            m["mean_us"] = statistics.mean(r["mean_us"] for r in ok)
            m["iters"] = sum(r["iters"] for r in ok)
        if any(r.get("validation") != "pass" for r in recs):
            m["validation"] = next(r["validation"] for r in recs if r.get("validation") != "pass")
        m["note"] = f"median of {len(recs)} runs' medians"
        merged.append(m)
    result = dict(runs[0])
    result["records"] = merged
    result.pop("checks", None)  # the checks of one run; read_json ignores them
    json.dump(result, open(out, "w"), indent=1)
    print(f"{out}: {len(merged)} cells from {len(runs)} runs")


if __name__ == "__main__":
    main()
