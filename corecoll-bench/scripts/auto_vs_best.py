# auto against the best algorithm of the same run, per cell, and whether auto ran the best's own
# algorithm (then the ratio is the noise between two rows of one schedule). Reads, from the
# workspace root, target/tuning/verify-p{2,8}.json (corecoll-bench/scripts/tune.sh verify) and
# the library's built-in tables, src/tuning/builtin.json.
import json,sys
tables=json.load(open('src/tuning/builtin.json'))
def pick(coll, ranks, b):
    t=[t for t in tables if t['collective']==coll and t['ranks']==ranks][0]
    for item in t['rules'].split(';'):
        name,rng=item.split(':'); lo,hi=rng.split('-')
        if int(lo)<=b and (hi=='max' or b<=int(hi)): return name
NAMES={'auto','linear','chain','binomial','recursive-doubling','rabenseifner','ring','pipelined-tree','dual-root','two-tree','direct','scatter-allgather','bruck','pairwise','recursive-halving','dissemination','tree'}
for p in sys.argv[1:]:
    d=json.load(open(f'target/tuning/verify-p{p}.json'))
    cells={}
    for r in d['records']:
        if r['source']!='corecoll' or r['algorithm'] not in NAMES or r['median_us'] is None: continue
        if r['algorithm'].startswith('hier'): continue
        cells.setdefault((r['collective'],r['ranks'],r['bytes']),{})[r['algorithm']]=r['median_us']
    n=0; over=0; same=0; pick_over=0; rows=[]
    for (c,rk,b),t in sorted(cells.items()):
        if 'auto' not in t: continue
        best=min(v for a,v in t.items() if a!='auto')
        ba=[a for a,v in t.items() if a!='auto' and v==best][0]
        pa=pick(c,rk,b); ra=t['auto']/best; rp=t.get(pa,float('nan'))/best
        n+=1
        if ra>1.25:
            over+=1
            if pa==ba: same+=1
            rows.append(f"  {c:15} {b:>9} auto/best {ra:.2f}  table's pick {pa} (its row {rp:.2f}×), best {ba}")
        if rp>1.25: pick_over+=1
    print(f"p={p}: {n} cells; auto > 1.25x best in {over} ({same} of them: auto ran the best's own algorithm); table's pick's own row > 1.25x best in {pick_over}")
    print('\n'.join(rows))
