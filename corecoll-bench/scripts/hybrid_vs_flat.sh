#!/usr/bin/env bash
# Hybrid (MPI processes × threads) against flat MPI at the same total ranks: builds
# corecoll-bench/examples/hybrid_allreduce and runs its table mode (`--table`) for R = 4 ranks as
#   1 process × 4 threads (the plain threads team), 2 processes × 2 threads, 4 processes × 1
#   thread (flat: the crate between 4 processes, and MPI_Allreduce over 4 processes),
# and for R = 2 as 1 × 2 and 2 × 1, at 1, 1000, 100 000 and 1 000 000 u64 per rank; writes one
# markdown file with the configuration and the exact command above each run's tables.
#
#   corecoll-bench/scripts/hybrid_vs_flat.sh OUT.md
#
# Environment: BUDGET (seconds per cell, default 0.2), COUNTS (default 1,1000,100000,1000000),
# MIN_REPS (default 3). Runs with `mpirun --bind-to none` (each process's threads may use every
# core), `--oversubscribe` where the processes outnumber the cores, and Open MPI's
# OMPI_ALLOW_RUN_AS_ROOT variables when run as root (as .ci/run does). A few minutes on a
# 2-core machine. The exit code is non-zero if any run failed (its error is in the file).
set -Eeuo pipefail

if [[ $# -ne 1 ]]; then
    echo "usage: $0 OUT.md" >&2
    exit 2
fi
out=$1
budget=${BUDGET:-0.2}
counts=${COUNTS:-1,1000,100000,1000000}
min_reps=${MIN_REPS:-3}

cd "$(dirname "$0")/../.."
cargo build --release -p corecoll-bench --features mpi --example hybrid_allreduce
bin=target/release/examples/hybrid_allreduce

mpirun_env=()
if [[ $(id -u) -eq 0 ]]; then
    mpirun_env=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
fi
cores=$(nproc)

{
    echo "# Hybrid against flat MPI at the same total ranks"
    echo
    echo "$(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $cores cores, $(mpirun --version 2>&1 | head -n 1)," \
        "commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)."
    echo "Allreduce (u64 sum) over all ranks; the slowest rank's minimum and median per cell;"
    echo "$budget s per cell, at least $min_reps repetitions. Produced by corecoll-bench/scripts/hybrid_vs_flat.sh."
} >"$out"

# plural N SINGULAR PLURAL: "1 process", "2 processes"
plural() { if (($1 == 1)); then echo "$1 $2"; else echo "$1 $3"; fi; }

failed=0
# (total ranks, processes, threads per process)
for config in "4 1 4" "4 2 2" "4 4 1" "2 1 2" "2 2 1"; do
    read -r ranks procs threads <<<"$config"
    cmd=(mpirun -np "$procs" --bind-to none)
    if ((procs > cores)); then
        cmd+=(--oversubscribe)
    fi
    cmd+=("$bin" --threads "$threads" --table --counts "$counts" --budget "$budget" --min-reps "$min_reps")
    case "$procs,$threads" in
    1,*) what="one process: the plain threads team" ;;
    *,1) what="flat: one rank per process" ;;
    *) what="hybrid" ;;
    esac
    title="R = $ranks: $(plural "$procs" process processes) × $(plural "$threads" thread threads) ($what)"
    echo "==> $title" >&2
    {
        echo
        echo "## $title"
        echo
        echo '```'
        echo "${cmd[*]}"
        echo '```'
        echo
    } >>"$out"
    if ! "${mpirun_env[@]}" "${cmd[@]}" >>"$out"; then
        echo "(this run failed)" >>"$out"
        echo "!!! the run above failed" >&2
        failed=1
    fi
done
echo "wrote $out" >&2
exit "$failed"
