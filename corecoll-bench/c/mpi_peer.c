/*
 * The MPI libraries' side of corecoll-bench's MPI rows: a thin C layer over one MPI library,
 * compiled by the crate's build script into a shared library once per MPI found (with that
 * MPI's own `mpicc`: Open MPI's and MPICH's), and loaded at run time by the benchmark's MPI
 * worker (src/mpi_baseline/library.rs) in each process that the MPI's own launcher starts.
 * Rust cannot link two MPI libraries into one program, and rsmpi builds against one: this
 * layer lets one Rust worker measure either.
 *
 * Every call works on MPI_COMM_WORLD and returns MPI's error code (MPI_SUCCESS is 0). Element
 * types and ops are passed as indices into the tables below, which the worker looks up once by
 * name (ccm_type, ccm_op).
 */
#include <mpi.h>
#include <string.h>

/* The element types by name: the benchmark's, and u64 for the worker's time stamps. */
static const char *const type_names[] = {"f64", "f32", "i64", "i32", "u8", "u64"};
static MPI_Datatype types[6];

/* The reduction ops by name, as the benchmark's --op spells them. */
static const char *const op_names[] = {"sum", "prod", "min", "max", "band", "bor", "bxor"};
static MPI_Op ops[7];

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Initialises MPI with MPI_THREAD_FUNNELED (the worker calls MPI from one thread) and the
 * tables; returns the thread level MPI provides, or -1 if MPI_Init_thread failed. */
int ccm_init(void)
{
    int provided = -1;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return -1;
    MPI_Datatype t[] = {MPI_DOUBLE, MPI_FLOAT, MPI_INT64_T, MPI_INT32_T, MPI_UINT8_T, MPI_UINT64_T};
    MPI_Op o[] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX, MPI_BAND, MPI_BOR, MPI_BXOR};
    memcpy(types, t, sizeof types);
    memcpy(ops, o, sizeof ops);
    return provided == MPI_THREAD_SINGLE ? 0 : 1;
}

int ccm_finalize(void) { return MPI_Finalize(); }

int ccm_rank(void)
{
    int r = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

int ccm_size(void)
{
    int p = -1;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    return p;
}

/* The library's version string, its first line, into buf (len bytes, NUL-terminated). */
void ccm_library(char *buf, int len)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    if (len <= 0)
        return;
    buf[0] = '\0';
    if (MPI_Get_library_version(v, &n) != MPI_SUCCESS)
        return;
    v[n < MPI_MAX_LIBRARY_VERSION_STRING ? n : MPI_MAX_LIBRARY_VERSION_STRING - 1] = '\0';
    size_t line = strcspn(v, "\n");
    if (line >= (size_t)len)
        line = (size_t)len - 1;
    memcpy(buf, v, line);
    buf[line] = '\0';
}

static int lookup(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

/* The index of the element type or op named `name`, or -1. */
int ccm_type(const char *name) { return lookup(type_names, COUNT(type_names), name); }
int ccm_op(const char *name) { return lookup(op_names, COUNT(op_names), name); }

#define W MPI_COMM_WORLD

int ccm_barrier(void) { return MPI_Barrier(W); }

int ccm_allreduce(const void *s, void *r, int n, int t, int o)
{
    return MPI_Allreduce(s, r, n, types[t], ops[o], W);
}

int ccm_reduce(const void *s, void *r, int n, int t, int o, int root)
{
    return MPI_Reduce(s, r, n, types[t], ops[o], root, W);
}

int ccm_bcast(void *b, int n, int t, int root) { return MPI_Bcast(b, n, types[t], root, W); }

int ccm_scan(const void *s, void *r, int n, int t, int o)
{
    return MPI_Scan(s, r, n, types[t], ops[o], W);
}

int ccm_exscan(const void *s, void *r, int n, int t, int o)
{
    return MPI_Exscan(s, r, n, types[t], ops[o], W);
}

/* Blocks of `n` elements; the receive buffer matters at the root only. */
int ccm_gather(const void *s, void *r, int n, int t, int root)
{
    return MPI_Gather(s, n, types[t], r, n, types[t], root, W);
}

int ccm_scatter(const void *s, void *r, int n, int t, int root)
{
    return MPI_Scatter(s, n, types[t], r, n, types[t], root, W);
}

int ccm_allgather(const void *s, void *r, int n, int t)
{
    return MPI_Allgather(s, n, types[t], r, n, types[t], W);
}

int ccm_alltoall(const void *s, void *r, int n, int t)
{
    return MPI_Alltoall(s, n, types[t], r, n, types[t], W);
}

int ccm_reduce_scatter_block(const void *s, void *r, int n, int t, int o)
{
    return MPI_Reduce_scatter_block(s, r, n, types[t], ops[o], W);
}

/* The v forms: `n` elements from this rank, every rank's count and displacement in `counts`
 * and `displs` (the same for sending and receiving). */
int ccm_gatherv(const void *s, int n, void *r, const int *counts, const int *displs, int t,
                int root)
{
    return MPI_Gatherv(s, n, types[t], r, counts, displs, types[t], root, W);
}

int ccm_scatterv(const void *s, const int *counts, const int *displs, void *r, int n, int t,
                 int root)
{
    return MPI_Scatterv(s, counts, displs, types[t], r, n, types[t], root, W);
}

int ccm_allgatherv(const void *s, int n, void *r, const int *counts, const int *displs, int t)
{
    return MPI_Allgatherv(s, n, types[t], r, counts, displs, types[t], W);
}

int ccm_alltoallv(const void *s, void *r, const int *counts, const int *displs, int t)
{
    return MPI_Alltoallv(s, counts, displs, types[t], r, counts, displs, types[t], W);
}
