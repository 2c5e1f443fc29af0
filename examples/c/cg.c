/* Conjugate gradients on an MPI+OpenMP program, written twice: the usual way (each dot
 * product an OpenMP `parallel for reduction`, then MPI_Allreduce on the master thread) and
 * with corecoll called from every thread of one parallel region (each dot product one
 * corecoll_allreduce over every thread of every process). Both solve the same system from the
 * same start; they must reach the same residuals (to rounding: the two sum in different
 * orders) and the same iteration count.
 *
 * The matrix is diagonal, A = diag(1 + (i mod 7)), so that the iteration is all dot products
 * and vector updates: what the two ways differ in.
 *
 *   mpicc -fopenmp examples/c/cg.c $(pkg-config --cflags --libs corecoll) -o cg
 *   mpirun -np 2 --bind-to none -x OMP_NUM_THREADS=2 ./cg [--multiple] [N per thread] [iterations]
 */
#include <mpi.h> /* before corecoll.h, which then declares corecoll_team_create_mpi */
#include <corecoll.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The diagonal of A at global row i. */
static double diag(long i) { return 1.0 + (double) (i % 7); }

/* The right-hand side at global row i. */
static double rhs(long i) { return 1.0 + (double) (i % 3); }

/* CG the usual way: residual norms after each iteration in `res`; the iterations made. */
static int cg_usual(long n, long first, int iters, double *res) {
    double *x = calloc(n, sizeof *x), *r = malloc(n * sizeof *r), *p = malloc(n * sizeof *p);
    double *q = malloc(n * sizeof *q);
    double rr = 0;
#pragma omp parallel for reduction(+ : rr)
    for (long i = 0; i < n; i++) {
        r[i] = p[i] = rhs(first + i);
        rr += r[i] * r[i];
    }
    MPI_Allreduce(MPI_IN_PLACE, &rr, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    int k = 0;
    for (; k < iters && rr > 1e-28; k++) {
        double pq = 0;
#pragma omp parallel for reduction(+ : pq)
        for (long i = 0; i < n; i++) {
            q[i] = diag(first + i) * p[i];
            pq += p[i] * q[i];
        }
        MPI_Allreduce(MPI_IN_PLACE, &pq, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double alpha = rr / pq, rr_new = 0;
#pragma omp parallel for reduction(+ : rr_new)
        for (long i = 0; i < n; i++) {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
            rr_new += r[i] * r[i];
        }
        MPI_Allreduce(MPI_IN_PLACE, &rr_new, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        double beta = rr_new / rr;
        rr = rr_new;
#pragma omp parallel for
        for (long i = 0; i < n; i++) p[i] = r[i] + beta * p[i];
        res[k] = sqrt(rr);
    }
    free(x), free(r), free(p), free(q);
    return k;
}

/* CG with corecoll: one parallel region, every thread a rank of `team`, each thread owning
 * `n / threads` rows (the last thread the rest). */
static int cg_corecoll(corecoll_team_t *team, long n, long first, int iters, double *res, int *error) {
    int made = 0;
#pragma omp parallel
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        long lo = n * t / nt, hi = n * (t + 1) / nt;
        double *x = calloc(hi - lo + 1, sizeof *x), *r = malloc((hi - lo + 1) * sizeof *r);
        double *p = malloc((hi - lo + 1) * sizeof *p), *q = malloc((hi - lo + 1) * sizeof *q);
        corecoll_comm_t *comm;
        int rc = corecoll_join(team, t, &comm);
        double rr = 0;
        for (long i = lo; i < hi; i++) {
            r[i - lo] = p[i - lo] = rhs(first + i);
            rr += r[i - lo] * r[i - lo];
        }
        if (rc == CORECOLL_SUCCESS)
            rc = corecoll_allreduce(CORECOLL_IN_PLACE, &rr, 1, CORECOLL_DOUBLE, CORECOLL_SUM, comm);
        int k = 0;
        for (; rc == CORECOLL_SUCCESS && k < iters && rr > 1e-28; k++) {
            double pq = 0;
            for (long i = lo; i < hi; i++) {
                q[i - lo] = diag(first + i) * p[i - lo];
                pq += p[i - lo] * q[i - lo];
            }
            rc = corecoll_allreduce(CORECOLL_IN_PLACE, &pq, 1, CORECOLL_DOUBLE, CORECOLL_SUM, comm);
            double alpha = rr / pq, rr_new = 0;
            for (long i = lo; i < hi; i++) {
                x[i - lo] += alpha * p[i - lo];
                r[i - lo] -= alpha * q[i - lo];
                rr_new += r[i - lo] * r[i - lo];
            }
            if (rc == CORECOLL_SUCCESS)
                rc = corecoll_allreduce(CORECOLL_IN_PLACE, &rr_new, 1, CORECOLL_DOUBLE, CORECOLL_SUM, comm);
            double beta = rr_new / rr;
            rr = rr_new;
            for (long i = lo; i < hi; i++) p[i - lo] = r[i - lo] + beta * p[i - lo];
            if (t == 0) res[k] = sqrt(rr);
        }
        if (rc != CORECOLL_SUCCESS) {
#pragma omp critical
            {
                fprintf(stderr, "cg: thread %d: %s\n", t, corecoll_last_error());
                *error = rc;
            }
        }
        int left = corecoll_leave(comm);
        if (left != CORECOLL_SUCCESS && rc == CORECOLL_SUCCESS) {
#pragma omp critical
            *error = left;
        }
        if (t == 0) made = k;
        free(x), free(r), free(p), free(q);
    }
    return made;
}

int main(int argc, char **argv) {
    int multiple = argc > 1 && strcmp(argv[1], "--multiple") == 0;
    int arg = 1 + multiple;
    long per_thread = argc > arg ? atol(argv[arg]) : 10000;
    int iters = argc > arg + 1 ? atoi(argv[arg + 1]) : 50;
    int wanted = multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED, level;
    MPI_Init_thread(&argc, &argv, wanted, &level);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (level < wanted) {
        fprintf(stderr, "cg: MPI gives thread level %d, not %d\n", level, wanted);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int threads = omp_get_max_threads();
    long n = per_thread * threads, first = n * rank;
    double *usual = calloc(iters, sizeof *usual), *ours = calloc(iters, sizeof *ours);

    corecoll_team_t *team;
    int rc = corecoll_team_create_mpi(MPI_COMM_WORLD, threads, &team);
    if (rc != CORECOLL_SUCCESS) {
        fprintf(stderr, "cg: process %d: %s\n", rank, corecoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double t0 = MPI_Wtime();
    int k_usual = cg_usual(n, first, iters, usual);
    double t1 = MPI_Wtime();
    int error = CORECOLL_SUCCESS;
    int k_ours = cg_corecoll(team, n, first, iters, ours, &error);
    double t2 = MPI_Wtime();
    corecoll_team_free(team);

    int same = error == CORECOLL_SUCCESS && k_usual == k_ours;
    for (int k = 0; same && k < k_usual; k++)
        same = fabs(usual[k] - ours[k]) <= 1e-10 * fabs(usual[k]) + 1e-300;
    if (rank == 0) {
        printf("cg: %d processes x %d threads (%s), %ld rows: %d iterations, residual %.6e "
               "(OpenMP reduction + MPI_Allreduce: %.3f s) and %.6e (corecoll from every "
               "thread: %.3f s): %s\n",
               size, threads, multiple ? "MPI_THREAD_MULTIPLE" : "MPI_THREAD_FUNNELED",
               n * size, k_usual, k_usual ? usual[k_usual - 1] : 0.0, t1 - t0,
               k_ours ? ours[k_ours - 1] : 0.0, t2 - t1, same ? "the same" : "DIFFERENT");
    }
    int all_same;
    MPI_Allreduce(&same, &all_same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    free(usual), free(ours);
    MPI_Finalize();
    return all_same ? 0 : 1;
}
