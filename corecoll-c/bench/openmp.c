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
 *   64 KiB per thread (8192 doubles), inside one parallel region:
 *     omp-array  each thread's vector added into a shared one by `#pragma omp for
 *                reduction(+:v[0:n])`, every thread then reading it
 *     corecoll   corecoll_allreduce of the 8192 doubles, in place
 *
 *   cc -O2 -fopenmp corecoll-c/bench/openmp.c $(pkg-config --cflags --libs corecoll) -o openmp
 *   OMP_NUM_THREADS=2 OMP_PROC_BIND=close OMP_PLACES=cores ./openmp [rounds] [reps]
 */
#include <corecoll.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LONG = 8192 };

/* The sum of the in-region OpenMP reduction (shared by the region's threads). */
static double s_in;

static int cmp(const void *a, const void *b) {
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int fail(const char *what, int rc) {
    fprintf(stderr, "openmp: %s: %s (%s)\n", what, corecoll_error_string(rc), corecoll_last_error());
    exit(1);
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 21, reps = argc > 2 ? atoi(argv[2]) : 20000;
    int p = omp_get_max_threads();
    corecoll_team_t *team;
    int rc = corecoll_team_create(p, &team);
    if (rc) fail("team", rc);
    double *t[6];
    for (int v = 0; v < 6; v++) t[v] = calloc(rounds, sizeof(double));
    static double shared[LONG];
    double check = 0, want = p * (p - 1) / 2.0;
    for (int round = 0; round < rounds; round++) {
        /* Inside one region: OpenMP's for-reduction, corecoll's allreduce (8 B), and the
         * 64 KiB pair. */
#pragma omp parallel
        {
            int r = omp_get_thread_num();
            corecoll_comm_t *comm;
            int rc = corecoll_join(team, r, &comm);
            if (rc) fail("join", rc);
            double *mine = malloc(LONG * sizeof *mine);
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
            int long_reps = reps / 100 + 1;
            for (int k = 0; k < long_reps; k++) {
#pragma omp single
                memset(shared, 0, sizeof shared);
                for (int i = 0; i < LONG; i++) mine[i] = r + i;
#pragma omp for reduction(+ : shared[0:LONG])
                for (int q = 0; q < p; q++)
                    for (int i = 0; i < LONG; i++) shared[i] += mine[i];
                /* (the for's barrier: every thread may read `shared` now) */
            }
            double t3 = omp_get_wtime();
            for (int k = 0; k < long_reps; k++) {
                for (int i = 0; i < LONG; i++) mine[i] = r + i;
                corecoll_allreduce(CORECOLL_IN_PLACE, mine, LONG, CORECOLL_DOUBLE, CORECOLL_SUM, comm);
            }
            double t4 = omp_get_wtime();
            if (r == 0) {
                t[0][round] = (t1 - t0) / reps, t[1][round] = (t2 - t1) / reps;
                t[4][round] = (t3 - t2) / long_reps, t[5][round] = (t4 - t3) / long_reps;
                check = (s_in == want && x == want && mine[1] == shared[1]) ? check : -1;
            }
            free(mine);
            corecoll_leave(comm);
        }
        /* A region per reduction: fork-join `parallel for reduction`, and join-allreduce-leave. */
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
        t[2][round] = (t1 - t0) / reps, t[3][round] = (t2 - t1) / reps;
        if (s != want || joined != want) check = -1;
    }
    corecoll_team_free(team);
    double m[6];
    for (int v = 0; v < 6; v++) m[v] = median(t[v], rounds) * 1e6;
    printf("openmp: %d threads, %d rounds of %d reductions (medians, µs per reduction)%s\n", p,
           rounds, reps, check < 0 ? " -- WRONG RESULTS" : "");
    printf("  8 B in a region:   omp for reduction %.3f   corecoll_allreduce %.3f   ratio %.2f\n",
           m[0], m[1], m[1] / m[0]);
    printf("  8 B, a region each: parallel for reduction %.3f   join+allreduce+leave %.3f   ratio %.2f\n",
           m[2], m[3], m[3] / m[2]);
    printf("  64 KiB in a region: omp array reduction %.3f   corecoll_allreduce %.3f   speed-up %.2f\n",
           m[4], m[5], m[4] / m[5]);
    return check < 0;
}
