/* The median of n times (the benchmark programs of this directory report medians over
 * interleaved rounds). Sorts v. */
#ifndef CORECOLL_BENCH_MEDIAN_H
#define CORECOLL_BENCH_MEDIAN_H
#include <stdlib.h>

static int bench_cmp(const void *a, const void *b) {
    double x = *(const double *) a, y = *(const double *) b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, n, sizeof *v, bench_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
#endif
