# How many times faster corecoll's `auto` is than each peer row of an allreduce sweep (the
# peer's median over auto's), per size, over one or more passes (min–max), and the context
# switches per iteration of each; with --with-touch each median counts the write of the
# inputs before the call too (the `touch_us` field). Reads the sweeps' JSON or CSV files:
#   python3 corecoll-bench/scripts/peer_ratios.py [--with-touch] p2-touch-1.json p2-touch-2.json
# Columns: the OpenMP and rayon rows, and each MPI library's faster row.
import collections, csv, json, sys

COLS = ['openmp-reduction', 'openmp-slices', 'rayon-reduce', 'rayon-chunks', 'Open MPI', 'MPICH']
args = sys.argv[1:]
with_touch = '--with-touch' in args
files = [a for a in args if a != '--with-touch']

def label(b):
    for unit, name in ((1 << 20, 'MiB'), (1 << 10, 'KiB')):
        if b >= unit and b % unit == 0:
            return f"{b // unit} {name}"
    return f"{b} B"

def fmt(us):
    if us < 1:
        return f"{us * 1000:.0f} ns"
    return f"{us:.2f} µs" if us < 10 else (f"{us:.1f} µs" if us < 1000 else f"{us / 1000:.2f} ms")

def cost(r):
    return r['median_us'] + ((r.get('touch_us') or 0) if with_touch else 0)

def rows_of(rs, col):
    if col == 'Open MPI':
        return [r for r in rs if r['algorithm'].startswith('openmpi')]
    if col == 'MPICH':
        return [r for r in rs if r['algorithm'].startswith('mpich')]
    return [r for r in rs if r['algorithm'] == col]

def records(path):
    """The records of a result file: JSON as written, CSV with its numbers parsed."""
    if not path.endswith('.csv'):
        return json.load(open(path))['records']
    out = []
    for r in csv.DictReader(open(path, newline='')):
        for key in ('median_us', 'touch_us', 'switches'):
            r[key] = float(r[key]) if r.get(key) not in (None, '', 'NaN') else None
        r['bytes'] = int(r['bytes'])
        out.append(r)
    return out

data = collections.defaultdict(lambda: collections.defaultdict(list))
for path in files:
    by_size = collections.defaultdict(list)
    for r in records(path):
        if r['collective'] == 'allreduce' and r['median_us'] is not None and r['validation'] != 'fail':
            by_size[r['bytes']].append(r)
    for b, rs in by_size.items():
        auto = [r for r in rs if r['algorithm'] == 'auto']
        if not auto:
            continue
        a = cost(auto[0])
        data[b]['auto'].append(a)
        if auto[0].get('switches') is not None:
            data[b]['auto sw'].append(auto[0]['switches'])
        for col in COLS:
            peer = rows_of(rs, col)
            if peer:
                fastest = min(peer, key=cost)
                data[b][col].append(cost(fastest) / a)
                if fastest.get('switches') is not None:
                    data[b][col + ' sw'].append(fastest['switches'])

def span(v, f):
    if not v:
        return '-'
    lo, hi = min(v), max(v)
    return f(lo) if abs(hi - lo) < 1e-9 * max(1, abs(hi)) else f"{f(lo)}–{f(hi)}"

times = lambda v: f"{v:.1f}×" if v >= 10 else f"{v:.2f}×"
header = "| bytes | `Auto` | " + " | ".join(COLS) + " |\n| ---: | ---: | " + " | ".join(["---:"] * len(COLS)) + " |"
print(header)
for b in sorted(data):
    print(f"| {label(b)} | {span(data[b]['auto'], fmt)} | " + " | ".join(span(data[b][c], times) for c in COLS) + " |")
print("\nswitches per iteration:\n")
print(header)
for b in sorted(data):
    sw = lambda v: f"{v:.1f}"
    print(f"| {label(b)} | {span(data[b]['auto sw'], sw)} | " + " | ".join(span(data[b][c + ' sw'], sw) for c in COLS) + " |")
