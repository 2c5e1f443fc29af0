/* A region per reduction on a hybrid team, against what it replaces: the threads of every
 * process summing one double each across all processes. In one run with interleaved rounds
 * (each round times each variant once; medians over rounds, and their ratio):
 *
 *   fork-join + MPI   `#pragma omp parallel for reduction(+:s)` over the process's threads,
 *                     then MPI_Allreduce of `s` from the master thread
 *   join              a region whose threads join a hybrid team (corecoll_team_create_mpi),
 *                     make one corecoll_allreduce of one double and leave
 *   inside            one region that joins once and makes every corecoll_allreduce of the
 *                     round (what a call costs once the threads have joined)
 *   and, for reference, MPI_Allreduce of one double alone, from the master thread
 *
 *   corecoll-c/install.sh --mpi PREFIX
 *   mpicc -O3 -fopenmp corecoll-c/bench/openmp_mpi.c $(pkg-config --cflags --libs corecoll) \
 *       -o openmp_mpi
 *   mpirun -np 2 --bind-to none -x OMP_NUM_THREADS=1 ./openmp_mpi [rounds] [reps]
 */
#include <mpi.h> /* before corecoll.h, which then declares corecoll_team_create_mpi */
#include <corecoll.h>
#include "median.h"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

enum { FORK_JOIN, JOINED, INSIDE, MPI_ONLY, COLUMNS };

/* A region of p threads that join the team, make `calls` allreduces of one double each (thread
 * i of process q contributing q * p + i) and leave: the last sum, as the master thread saw it. */
static double joined_region(corecoll_team_t *team, int me, int p, int calls) {
    double sum = 0;
#pragma omp parallel
    {
        corecoll_comm_t *comm;
        double x = 0;
        corecoll_join(team, omp_get_thread_num(), &comm);
        for (int k = 0; k < calls; k++) {
            x = me * p + omp_get_thread_num();
            corecoll_allreduce(CORECOLL_IN_PLACE, &x, 1, CORECOLL_DOUBLE, CORECOLL_SUM, comm);
        }
        corecoll_leave(comm);
#pragma omp master
        sum = x;
    }
    return sum;
}

int main(int argc, char **argv) {
    int level;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &level);
    int rounds = argc > 1 ? atoi(argv[1]) : 15, reps = argc > 2 ? atoi(argv[2]) : 5000;
    int me, procs, p = omp_get_max_threads();
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &procs);
    corecoll_team_t *team;
    int rc = corecoll_team_create_mpi(MPI_COMM_WORLD, p, &team);
    if (rc) {
        fprintf(stderr, "openmp_mpi: team: %s (%s)\n", corecoll_error_string(rc), corecoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double *t[COLUMNS];
    for (int v = 0; v < COLUMNS; v++) t[v] = calloc(rounds, sizeof(double));
    /* Thread i of process q contributes q * p + i: the sum over all is n (n - 1) / 2. */
    double n = (double) procs * p, want = n * (n - 1) / 2, check = 0;
    for (int round = 0; round < rounds; round++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime(), s = 0;
        for (int k = 0; k < reps; k++) {
            s = 0;
#pragma omp parallel for reduction(+ : s)
            for (int i = 0; i < p; i++) s += me * p + i;
            MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
        double t1 = MPI_Wtime();
        if (s != want) check = -1;
        MPI_Barrier(MPI_COMM_WORLD);
        double t2 = MPI_Wtime();
        for (int k = 0; k < reps; k++)
            if (joined_region(team, me, p, 1) != want) check = -1;
        double t3 = MPI_Wtime();
        MPI_Barrier(MPI_COMM_WORLD);
        double t6 = MPI_Wtime();
        if (joined_region(team, me, p, reps) != want) check = -1;
        double t7 = MPI_Wtime();
        MPI_Barrier(MPI_COMM_WORLD);
        double t4 = MPI_Wtime();
        for (int k = 0; k < reps; k++) {
            s = me;
            MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        }
        double t5 = MPI_Wtime();
        t[FORK_JOIN][round] = (t1 - t0) / reps, t[JOINED][round] = (t3 - t2) / reps;
        t[MPI_ONLY][round] = (t5 - t4) / reps;
        t[INSIDE][round] = (t7 - t6) / reps;
    }
    corecoll_team_free(team);
    double m[COLUMNS];
    for (int v = 0; v < COLUMNS; v++) m[v] = median(t[v], rounds) * 1e6;
    if (me == 0)
        printf("openmp_mpi: %d processes × %d threads, %d rounds of %d (medians, µs per "
               "reduction)%s\n  fork-join + MPI_Allreduce %.3f   join+allreduce+leave %.3f   "
               "ratio %.2f   (inside one region %.3f, MPI_Allreduce alone %.3f)\n",
               procs, p, rounds, reps, check < 0 ? " -- WRONG RESULTS" : "", m[FORK_JOIN],
               m[JOINED], m[JOINED] / m[FORK_JOIN], m[INSIDE], m[MPI_ONLY]);
    MPI_Finalize();
    return check < 0;
}
