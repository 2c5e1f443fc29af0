#!/bin/bash
# The sweeps behind the built-in decision tables (docs/tuning.md): every collective and
# algorithm (and `auto`) at p = 2 and p = 8, 8 B to 16 MiB, then `--tune` over both.
#   corecoll-bench/scripts/tune.sh tune    # measure and derive target/tuning/tables.json
#   corecoll-bench/scripts/tune.sh verify  # measure again (after building the tables in) for
#                                          # the cliffs
#   corecoll-bench/scripts/tune.sh merge   # no measuring: tables from the tune and verify runs
#                                          # together, each cell's median the median of the
#                                          # runs' (merge_runs.py)
# ROUNDS=R (default 5) measures each size's rows in R interleaved rounds (--rounds), TIME=S
# (default 0.1) is the seconds per cell over all rounds, REPEAT=N (default 1) runs each sweep
# N times and keeps each cell's best pass (--repeat), RANKS="2 8" (the default) the rank
# counts. The verify sweeps run with application-like buffers (--touch: every rank writes its
# input before each call), as a program calls the collectives; CACHE=warm (or cold) runs
# them with the buffers as the last call left them (or cold) instead. The tune sweeps run
# warm unless CACHE says otherwise. Paths are the workspace root's.
set -e
cd "$(dirname "$0")/../.."
name=${1:-tune}
mkdir -p target/tuning
cargo build --release -p corecoll-bench --bin corecoll-bench
if [ "$name" = merge ]; then
  for p in 2 8; do
    python3 corecoll-bench/scripts/merge_runs.py target/tuning/merged-p$p.json target/tuning/tune-p$p.json target/tuning/verify-p$p.json
  done
  ./target/release/corecoll-bench --tune target/tuning/merged-p2.json,target/tuning/merged-p8.json \
    --tables-out target/tuning/tables.json --profile-out target/tuning/profile.json
  exit
fi
case "${CACHE:-}" in
  "") if [ "$name" = verify ]; then cache=--touch; else cache=; fi ;;
  warm) cache= ;;
  touch | cold) cache=--$CACHE ;;
  *) echo "CACHE must be warm, touch or cold" >&2; exit 2 ;;
esac
ALGS=auto,linear,chain,binomial,recursive-doubling,rabenseifner,ring,pipelined-tree,dual-root,two-tree,direct,scatter-allgather,bruck,pairwise,recursive-halving,dissemination,tree
COLL=allreduce,broadcast,reduce,scan,gather,scatter,allgather,alltoall,reduce-scatter,barrier
for p in ${RANKS:-2 8}; do
  ./target/release/corecoll-bench --collective $COLL --ranks $p --sizes 8..16MiB --algorithms $ALGS $cache \
    --time ${TIME:-0.1} --rounds ${ROUNDS:-5} --repeat ${REPEAT:-1} -q --json target/tuning/$name-p$p.json --csv target/tuning/$name-p$p.csv \
    > target/tuning/$name-p$p.txt
done
if [ "$name" = tune ]; then
  ./target/release/corecoll-bench --tune target/tuning/tune-p2.json,target/tuning/tune-p8.json \
    --tables-out target/tuning/tables.json --profile-out target/tuning/profile.json
else
  python3 corecoll-bench/scripts/auto_vs_best.py ${RANKS:-2 8}
fi
