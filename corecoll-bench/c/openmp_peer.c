/*
 * The OpenMP peer of corecoll-bench: an allreduce of f64 sums as a C program with OpenMP
 * writes it, driven call by call from Rust (src/peers/openmp.rs). Thread t of a region owns
 * vector t, its rank's contribution; every variant leaves the sum of the p vectors in one
 * shared vector that every thread may read after the region (the result of an OpenMP
 * reduction), so it never copies the result into p buffers as an allreduce does.
 *
 * - reduction: `#pragma omp parallel reduction(+:sum[:n])`, each thread adding its vector
 *   into its private copy, which the runtime combines into `sum` at the region's end (gcc
 *   keeps each private copy on its thread's stack; see ccb_omp_new).
 * - slices: a hand-written region in which thread t adds up slice t of all p vectors, in
 *   thread order, into the same slice of `sum`.
 *
 * Each region's threads are pinned, in the first region of a peer, to the cores the Rust side
 * passes (the cores of the ranks of the same numbers), as OMP_PLACES=cores with
 * OMP_PROC_BIND=close would place them; those variables cannot be set here, as libgomp reads
 * them once when it loads.
 */
#define _GNU_SOURCE
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct ccb_omp {
    int threads;
    size_t n;
    double **vectors; /* one per thread, allocated and first written by its thread */
    double *sum;
} ccb_omp;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* n doubles on a 64-byte boundary (at least one, so that every vector has an address). */
static double *lines(size_t n)
{
    size_t bytes = (n ? n : 1) * sizeof(double);
    void *p = NULL;
    return posix_memalign(&p, 64, (bytes + 63) / 64 * 64) == 0 ? p : NULL;
}

/*
 * A peer of `threads` threads over vectors of `n` doubles, or NULL when memory runs out.
 * `cores` holds a core per thread, or is NULL (unpinned). The calling thread becomes the
 * regions' master: it must have a stack of at least `stack` bytes, and so will the workers
 * that its first region creates (threads that the reduction's private copies fit on).
 */
ccb_omp *ccb_omp_new(int threads, size_t n, const int *cores, size_t stack)
{
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) == 0) {
        pthread_attr_setstacksize(&attr, stack);
        pthread_setattr_default_np(&attr);
        pthread_attr_destroy(&attr);
    }
    ccb_omp *peer = calloc(1, sizeof *peer);
    if (!peer)
        return NULL;
    peer->threads = threads;
    peer->n = n;
    peer->vectors = calloc((size_t)threads, sizeof *peer->vectors);
    peer->sum = lines(n);
    int failed = !peer->vectors || !peer->sum;
#pragma omp parallel num_threads(threads) reduction(| : failed)
    {
        int t = omp_get_thread_num();
        if (cores) {
            cpu_set_t set;
            CPU_ZERO(&set);
            CPU_SET(cores[t], &set);
            sched_setaffinity(0, sizeof set, &set);
        }
        if (peer->vectors) {
            double *v = lines(n);
            if (v)
                memset(v, 0, n * sizeof *v);
            peer->vectors[t] = v;
            failed |= !v || omp_get_num_threads() != threads;
        }
    }
    if (peer->sum)
        memset(peer->sum, 0, n * sizeof *peer->sum);
    if (failed) {
        if (peer->vectors)
            for (int t = 0; t < threads; t++)
                free(peer->vectors[t]);
        free(peer->vectors);
        free(peer->sum);
        free(peer);
        return NULL;
    }
    return peer;
}

void ccb_omp_free(ccb_omp *peer)
{
    for (int t = 0; t < peer->threads; t++)
        free(peer->vectors[t]);
    free(peer->vectors);
    free(peer->sum);
    free(peer);
}

/* Thread t's vector (to load the check's inputs from the master). */
double *ccb_omp_vector(ccb_omp *peer, int t) { return peer->vectors[t]; }

/* The shared result. */
const double *ccb_omp_sum(const ccb_omp *peer) { return peer->sum; }

/*
 * Every thread writes `value` into its whole vector, as an application writes its input
 * before the reduction; returns the slowest thread's nanoseconds.
 */
uint64_t ccb_omp_touch(ccb_omp *peer, double value)
{
    uint64_t slowest = 0;
#pragma omp parallel num_threads(peer->threads) reduction(max : slowest)
    {
        uint64_t t0 = now_ns();
        double *v = peer->vectors[omp_get_thread_num()];
        for (size_t i = 0; i < peer->n; i++)
            v[i] = value;
        slowest = now_ns() - t0;
    }
    return slowest;
}

/* The reduction idiom (the master first clears `sum`, which the reduction adds to). */
void ccb_omp_reduction(ccb_omp *peer)
{
    double *sum = peer->sum;
    size_t n = peer->n;
    if (n == 0) {
        /* A zero-length array section: the region, with nothing to reduce. */
#pragma omp parallel num_threads(peer->threads)
        {
        }
        return;
    }
    memset(sum, 0, n * sizeof *sum);
#pragma omp parallel num_threads(peer->threads) reduction(+ : sum[:n])
    {
        const double *v = peer->vectors[omp_get_thread_num()];
        for (size_t i = 0; i < n; i++)
            sum[i] += v[i];
    }
}

/* The hand-written region: thread t sums slice t (whole 64-byte lines) of every vector. */
void ccb_omp_slices(ccb_omp *peer)
{
#pragma omp parallel num_threads(peer->threads)
    {
        int t = omp_get_thread_num(), p = omp_get_num_threads();
        size_t lines = (peer->n + 7) / 8;
        size_t lo = lines * (size_t)t / (size_t)p * 8, hi = lines * (size_t)(t + 1) / (size_t)p * 8;
        if (hi > peer->n)
            hi = peer->n;
        if (lo > hi)
            lo = hi;
        double *sum = peer->sum;
        const double *first = peer->vectors[0];
        for (size_t i = lo; i < hi; i++)
            sum[i] = first[i];
        for (int q = 1; q < p; q++) {
            const double *v = peer->vectors[q];
            for (size_t i = lo; i < hi; i++)
                sum[i] += v[i];
        }
    }
}
