/* corecoll from OpenMP threads against OpenMP's own idioms for the same job, in one run with
 * interleaved rounds (each round times every variant once; the medians over rounds are
 * reported, and their ratios):
 *
 *   8 bytes per thread, inside one parallel region:
 *     omp-for    `#pragma omp for reduction(+:s)` over one element per thread, then the
 *                region's implicit barrier (every thread sees the sum)
 *     corecoll   corecoll_allreduce of one double, in place
 *   8 bytes per thread, a parallel region per reduction (as most codes write a dot product):
 *     fork-join  `#pragma omp parallel for reduction(+:s)`
 *     join       a region that joins a team, makes one corecoll_allreduce and leaves
 *     and, to show what the region itself costs: an empty region, and a region that only
 *     joins and leaves
 *   64 KiB and 1 MiB per thread (8192 and 131072 doubles), inside one parallel region, each
 *   thread writing its whole vector before every reduction (as a solver does):
 *     omp-array  each thread's vector added into a shared one by `#pragma omp for
 *                reduction(+:v[0:n])`, every thread then reading it
 *     corecoll   corecoll_allreduce of the vector, in place
 *     and the write alone, timed apart, so that both can be shown with it subtracted
 *
 *   cc -O3 -fopenmp corecoll-c/bench/openmp.c $(pkg-config --cflags --libs corecoll) -o openmp
 *   OMP_NUM_THREADS=2 OMP_PROC_BIND=close OMP_PLACES=cores ./openmp [rounds] [reps]
 *
 * (-O3: at -O2 gcc 12 does not vectorise the write of a vector whose length is known only at
 * run time, which would make the write, on both sides, four times as long.)
 */
#include <corecoll.h>
#include "median.h"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The vector lengths of the long reductions (doubles per thread): 64 KiB and 1 MiB. */
enum { SIZES = 2 };
static const int LONG[SIZES] = {8192, 131072};
enum { MAX_LONG = 131072 };

/* The sum of the in-region OpenMP reduction (shared by the region's threads). */
static double s_in;
/* The shared vector of OpenMP's array reduction. */
static double shared[MAX_LONG];

/* What is timed, one column each. */
enum {
    OMP_FOR, CC_SHORT,            /* 8 B inside one region */
    FORK_JOIN, JOINED, EMPTY, JOIN_LEAVE, /* 8 B, a region each */
    OMP_ARRAY, CC_LONG, WRITE,    /* long, per size (three columns each) */
    COLUMNS = WRITE + 1 + 3 * (SIZES - 1)
};

static int fail(const char *what, int rc) {
    fprintf(stderr, "openmp: %s: %s (%s)\n", what, corecoll_error_string(rc), corecoll_last_error());
    exit(1);
}

/* Thread r's vector of length n, written whole (what a solver's step does before its sum). */
static void write_vector(double *mine, int n, int r) {
    for (int i = 0; i < n; i++) mine[i] = r + i;
}

/* OpenMP's array reduction of every thread's vector into `shared`, called from inside the
 * region (in a function of its own: gcc makes each thread's private copy of a variable-length
 * section on the stack, which only a return gives back). */
static void omp_array_sum(const double *mine, int n, int p) {
#pragma omp for reduction(+ : shared[0:n])
    for (int q = 0; q < p; q++)
        for (int i = 0; i < n; i++) shared[i] += mine[i];
    /* (the for's barrier: every thread may read `shared` now) */
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 21, reps = argc > 2 ? atoi(argv[2]) : 20000;
    int p = omp_get_max_threads();
    corecoll_team_t *team;
    int rc = corecoll_team_create(p, &team);
    if (rc) fail("team", rc);
    double *t[COLUMNS];
    for (int v = 0; v < COLUMNS; v++) t[v] = calloc(rounds, sizeof(double));
    double check = 0, want = p * (p - 1) / 2.0;
    for (int round = 0; round < rounds; round++) {
        /* Inside one region: OpenMP's for-reduction, corecoll's allreduce (8 B), and the
         * long pairs with the write timed apart. */
#pragma omp parallel
        {
            int r = omp_get_thread_num();
            corecoll_comm_t *comm;
            int rc = corecoll_join(team, r, &comm);
            if (rc) fail("join", rc);
            double *mine = malloc(MAX_LONG * sizeof *mine);
            double t0 = omp_get_wtime();
            for (int k = 0; k < reps; k++) {
#pragma omp single
                s_in = 0;
#pragma omp for reduction(+ : s_in)
                for (int i = 0; i < p; i++) s_in += i;
            }
            double t1 = omp_get_wtime();
            double x = 0;
            for (int k = 0; k < reps; k++) {
                x = r;
                corecoll_allreduce(CORECOLL_IN_PLACE, &x, 1, CORECOLL_DOUBLE, CORECOLL_SUM, comm);
            }
            double t2 = omp_get_wtime();
            if (r == 0) t[OMP_FOR][round] = (t1 - t0) / reps, t[CC_SHORT][round] = (t2 - t1) / reps;
            for (int z = 0; z < SIZES; z++) {
                int n = LONG[z], long_reps = (int) ((long) reps * 80 / n) + 1;
#pragma omp barrier
                double a = omp_get_wtime();
                for (int k = 0; k < long_reps; k++) {
#pragma omp single
                    memset(shared, 0, n * sizeof *shared);
                    write_vector(mine, n, r);
                    omp_array_sum(mine, n, p);
                }
                double b = omp_get_wtime();
                for (int k = 0; k < long_reps; k++) {
                    write_vector(mine, n, r);
                    corecoll_allreduce(CORECOLL_IN_PLACE, mine, n, CORECOLL_DOUBLE, CORECOLL_SUM, comm);
                }
                double c = omp_get_wtime();
                for (int k = 0; k < long_reps; k++) {
                    write_vector(mine, n, r);
                    __asm__ volatile("" : : "r"(mine) : "memory");
                }
                double d = omp_get_wtime();
                if (r == 0) {
                    t[OMP_ARRAY + 3 * z][round] = (b - a) / long_reps;
                    t[CC_LONG + 3 * z][round] = (c - b) / long_reps;
                    t[WRITE + 3 * z][round] = (d - c) / long_reps;
                }
#pragma omp barrier
                if (r == 0 && !(s_in == want && x == want)) check = -1;
                write_vector(mine, n, r);
                corecoll_allreduce(CORECOLL_IN_PLACE, mine, n, CORECOLL_DOUBLE, CORECOLL_SUM, comm);
                if (r == 0 && mine[n - 1] != shared[n - 1]) check = -1;
#pragma omp barrier
            }
            free(mine);
            corecoll_leave(comm);
        }
        /* A region per reduction: fork-join `parallel for reduction`, join-allreduce-leave,
         * an empty region and one that only joins and leaves. */
        double t0 = omp_get_wtime(), s = 0;
        for (int k = 0; k < reps; k++) {
            s = 0;
#pragma omp parallel for reduction(+ : s)
            for (int i = 0; i < p; i++) s += i;
        }
        double t1 = omp_get_wtime();
        double joined = 0;
        for (int k = 0; k < reps; k++) {
#pragma omp parallel
            {
                corecoll_comm_t *comm;
                double x = omp_get_thread_num();
                corecoll_join(team, omp_get_thread_num(), &comm);
                corecoll_allreduce(CORECOLL_IN_PLACE, &x, 1, CORECOLL_DOUBLE, CORECOLL_SUM, comm);
                corecoll_leave(comm);
#pragma omp master
                joined = x;
            }
        }
        double t2 = omp_get_wtime();
        for (int k = 0; k < reps; k++) {
#pragma omp parallel
            { __asm__ volatile(""); }
        }
        double t3 = omp_get_wtime();
        for (int k = 0; k < reps; k++) {
#pragma omp parallel
            {
                corecoll_comm_t *comm;
                corecoll_join(team, omp_get_thread_num(), &comm);
                corecoll_leave(comm);
            }
        }
        double t4 = omp_get_wtime();
        t[FORK_JOIN][round] = (t1 - t0) / reps, t[JOINED][round] = (t2 - t1) / reps;
        t[EMPTY][round] = (t3 - t2) / reps, t[JOIN_LEAVE][round] = (t4 - t3) / reps;
        if (s != want || joined != want) check = -1;
    }
    corecoll_team_free(team);
    double m[COLUMNS];
    for (int v = 0; v < COLUMNS; v++) m[v] = median(t[v], rounds) * 1e6;
    printf("openmp: %d threads, %d rounds of %d reductions (medians, µs per reduction)%s\n", p,
           rounds, reps, check < 0 ? " -- WRONG RESULTS" : "");
    printf("  8 B in a region:   omp for reduction %.3f   corecoll_allreduce %.3f   ratio %.2f\n",
           m[OMP_FOR], m[CC_SHORT], m[CC_SHORT] / m[OMP_FOR]);
    printf("  8 B, a region each: parallel for reduction %.3f   join+allreduce+leave %.3f   ratio %.2f\n",
           m[FORK_JOIN], m[JOINED], m[JOINED] / m[FORK_JOIN]);
    printf("    (an empty region %.3f, a region that joins and leaves %.3f)\n", m[EMPTY],
           m[JOIN_LEAVE]);
    for (int z = 0; z < SIZES; z++) {
        double omp = m[OMP_ARRAY + 3 * z], cc = m[CC_LONG + 3 * z], w = m[WRITE + 3 * z];
        printf("  %d KiB in a region, written before each: omp array reduction %.3f   "
               "corecoll_allreduce %.3f   speed-up %.2f   (the write %.3f; without it %.2f)\n",
               LONG[z] / 128, omp, cc, omp / cc, w, (omp - w) / (cc - w));
    }
    return check < 0;
}
