/* The C API checked from C: every function's results against references computed here, and
 * its error codes, on teams of 1, 2, 3, 4 and 7 OpenMP threads (each joining as its rank),
 * then the errors of the door (a second join, a team freed while joined, a rank that never
 * joins). Ends with the line "N passed, M failed"; the exit code is non-zero if any failed.
 *
 *   cc -fopenmp -I corecoll-c/include test_api.c -L target/release -lcorecoll && ./a.out
 */
#include <corecoll.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int passed, failed;

/* Records one check (from any thread). */
static void check(int ok, const char *what, int threads, int rank, int rc) {
    if (ok) {
#pragma omp atomic
        passed++;
    } else {
#pragma omp atomic
        failed++;
#pragma omp critical
        printf("FAIL %s (%d threads, rank %d, code %d: %s; %s)\n", what, threads, rank, rc,
               corecoll_error_string(rc), rc ? corecoll_last_error() : "");
    }
}

#define CHECK(cond, what) check((cond), (what), p, r, rc)
#define OK(call, what) do { rc = (call); CHECK(rc == CORECOLL_SUCCESS, what); } while (0)

/* A concatenation of decimal digits packed as digits * 256 + length: associative, and not
 * commutative, so a reduction shows the order of its operands. */
static uint64_t cat(uint64_t a, uint64_t b) {
    uint64_t digits = a >> 8, len = (a & 255) + (b & 255), shift = 1;
    for (uint64_t i = 0; i < (b & 255); i++) shift *= 10;
    return ((digits * shift + (b >> 8)) << 8) | len;
}

static void cat_op(void *in, void *inout, int *len, corecoll_datatype_t *type) {
    (void) type;
    uint64_t *a = in, *b = inout;
    for (int i = 0; i < *len; i++) b[i] = cat(a[i], b[i]);
}

/* Rank r's digit: r + 1 (one digit for up to nine ranks). */
static uint64_t digit(int r) { return ((uint64_t) (r + 1) << 8) | 1; }

/* The digits of ranks lo..hi-1 concatenated. */
static uint64_t cat_range(int lo, int hi) {
    uint64_t acc = 0;
    for (int q = lo; q < hi; q++) acc = cat(acc, digit(q));
    return acc;
}

static void collectives(corecoll_comm_t *comm, int p, int r, corecoll_op_t catop) {
    int rc;
    enum { N = 5 };
    double x[N], y[N];
    /* allreduce: in place and into another buffer, several types and ops. */
    for (int i = 0; i < N; i++) x[i] = r + i;
    OK(corecoll_allreduce(CORECOLL_IN_PLACE, x, N, CORECOLL_DOUBLE, CORECOLL_SUM, comm), "allreduce in place");
    CHECK(x[2] == p * (p - 1) / 2.0 + 2.0 * p, "allreduce sum");
    int32_t i32 = r * 3 - 1, m;
    OK(corecoll_allreduce(&i32, &m, 1, CORECOLL_INT32, CORECOLL_MAX, comm), "allreduce max");
    CHECK(m == (p - 1) * 3 - 1, "allreduce max value");
    uint64_t u = 1ull << r, all;
    OK(corecoll_allreduce(&u, &all, 1, CORECOLL_UINT64, CORECOLL_BXOR, comm), "allreduce bxor");
    CHECK(all == (1ull << p) - 1, "allreduce bxor value");
    float f = (float) -r, fmin;
    OK(corecoll_allreduce(&f, &fmin, 1, CORECOLL_FLOAT, CORECOLL_MIN, comm), "allreduce min");
    CHECK(fmin == (float) -(p - 1), "allreduce min value");
    int land = r + 1, lres;
    OK(corecoll_allreduce(&land, &lres, 1, CORECOLL_INT, CORECOLL_LAND, comm), "allreduce land");
    CHECK(lres == 1, "allreduce land value");
    uint64_t c = digit(r), cres;
    OK(corecoll_allreduce(&c, &cres, 1, CORECOLL_UINT64, catop, comm), "allreduce user op");
    CHECK(cres == cat_range(0, p), "allreduce non-commutative user op in rank order");
    /* The reproducible sum: 1e100 on rank 0 and -1e100 on the last cancel exactly, whatever the
     * algorithm adds first, and every rank's 0.5 (0.25f) survives; a float sum in rank order
     * would lose them. CORECOLL_REPRO_SUM on an integer type is refused. */
    double one = r == 0 ? 1e100 : (r == p - 1 ? -1e100 : 0.5);
    double big[3] = {one, -one, 0.5}, bigsum[3];
    OK(corecoll_allreduce(big, bigsum, 3, CORECOLL_DOUBLE, CORECOLL_REPRO_SUM, comm), "allreduce repro sum");
    double tail = p == 1 ? 1e100 : 0.5 * (p - 2);
    CHECK(bigsum[0] == tail && bigsum[1] == -tail && bigsum[2] == 0.5 * p, "allreduce repro sum value");
    float fbig = r == 0 ? 1e30f : (r == p - 1 ? -1e30f : 0.25f), fsum;
    OK(corecoll_allreduce(&fbig, &fsum, 1, CORECOLL_FLOAT, CORECOLL_REPRO_SUM, comm), "allreduce repro sum float");
    CHECK(fsum == (p == 1 ? 1e30f : 0.25f * (p - 2)), "allreduce repro sum float value");
    rc = corecoll_allreduce(&i32, &m, 1, CORECOLL_INT32, CORECOLL_REPRO_SUM, comm);
    CHECK(rc != CORECOLL_SUCCESS, "repro sum on integers refused");
    /* bcast and reduce at every root. */
    for (int root = 0; root < p; root++) {
        int64_t b[3] = {r, r * 2, r * 3};
        OK(corecoll_bcast(b, 3, CORECOLL_INT64, root, comm), "bcast");
        CHECK(b[0] == root && b[2] == 3 * root, "bcast value");
        uint64_t red = 0;
        c = digit(r);
        OK(corecoll_reduce(&c, &red, 1, CORECOLL_UINT64, catop, root, comm), "reduce user op");
        CHECK(r != root || red == cat_range(0, p), "reduce value at root");
        int16_t s = (int16_t) (r + 1), sres = 0;
        if (r == root) sres = s;
        OK(corecoll_reduce(r == root ? CORECOLL_IN_PLACE : &s, &sres, 1, CORECOLL_INT16, CORECOLL_PROD, root, comm), "reduce in place");
        int16_t fact = 1;
        for (int q = 1; q <= p; q++) fact = (int16_t) (fact * q);
        CHECK(r != root || sres == fact, "reduce prod value");
    }
    /* scan and exscan with the non-commutative op. */
    c = digit(r);
    OK(corecoll_scan(&c, &cres, 1, CORECOLL_UINT64, catop, comm), "scan");
    CHECK(cres == cat_range(0, r + 1), "scan value");
    cres = 0;
    OK(corecoll_exscan(&c, &cres, 1, CORECOLL_UINT64, catop, comm), "exscan");
    CHECK(r == 0 || cres == cat_range(0, r), "exscan value");
    /* gather, scatter, allgather, alltoall, reduce_scatter_block. */
    int mine[2] = {r, -r}, every[2 * 16], back[2];
    for (int root = 0; root < p; root++) {
        memset(every, 0, sizeof every);
        OK(corecoll_gather(mine, 2, CORECOLL_INT, every, 2, CORECOLL_INT, root, comm), "gather");
        int good = 1;
        for (int q = 0; q < p && r == root; q++) good &= every[2 * q] == q && every[2 * q + 1] == -q;
        CHECK(good, "gather value");
        for (int q = 0; q < 2 * p; q++) every[q] = q * 10;
        OK(corecoll_scatter(every, 2, CORECOLL_INT, back, 2, CORECOLL_INT, root, comm), "scatter");
        CHECK(back[0] == 20 * r && back[1] == 20 * r + 10, "scatter value");
    }
    OK(corecoll_allgather(mine, 2, CORECOLL_INT, every, 2, CORECOLL_INT, comm), "allgather");
    int good = 1;
    for (int q = 0; q < p; q++) good &= every[2 * q] == q && every[2 * q + 1] == -q;
    CHECK(good, "allgather value");
    memset(every, 0, sizeof every);
    every[2 * r] = r, every[2 * r + 1] = -r;
    OK(corecoll_allgather(CORECOLL_IN_PLACE, 0, CORECOLL_INT, every, 2, CORECOLL_INT, comm), "allgather in place");
    good = 1;
    for (int q = 0; q < p; q++) good &= every[2 * q] == q && every[2 * q + 1] == -q;
    CHECK(good, "allgather in place value");
    int to[16], from[16];
    for (int q = 0; q < p; q++) to[q] = r * 100 + q;
    OK(corecoll_alltoall(to, 1, CORECOLL_INT, from, 1, CORECOLL_INT, comm), "alltoall");
    good = 1;
    for (int q = 0; q < p; q++) good &= from[q] == q * 100 + r;
    CHECK(good, "alltoall value");
    double blocks[16 * 2], mineblock[2];
    for (int q = 0; q < 2 * p; q++) blocks[q] = q + r;
    OK(corecoll_reduce_scatter_block(blocks, mineblock, 2, CORECOLL_DOUBLE, CORECOLL_SUM, comm), "reduce_scatter_block");
    CHECK(mineblock[1] == p * (2 * r + 1) + p * (p - 1) / 2.0, "reduce_scatter_block value");
    /* v forms: rank q contributes q + 1 elements. */
    int counts[16], displs[16], total = 0;
    for (int q = 0; q < p; q++) counts[q] = q + 1, displs[q] = total, total += q + 1;
    int vsend[16], vrecv[16 * 17];
    for (int i = 0; i <= r; i++) vsend[i] = r * 1000 + i;
    OK(corecoll_allgatherv(vsend, r + 1, CORECOLL_INT, vrecv, counts, displs, CORECOLL_INT, comm), "allgatherv");
    good = 1;
    for (int q = 0; q < p; q++)
        for (int i = 0; i <= q; i++) good &= vrecv[displs[q] + i] == q * 1000 + i;
    CHECK(good, "allgatherv value");
    memset(vrecv, 0, sizeof vrecv);
    OK(corecoll_gatherv(vsend, r + 1, CORECOLL_INT, vrecv, counts, displs, CORECOLL_INT, p - 1, comm), "gatherv");
    CHECK(r != p - 1 || vrecv[displs[p - 1]] == (p - 1) * 1000, "gatherv value");
    int vback[16];
    OK(corecoll_scatterv(vrecv, counts, displs, CORECOLL_INT, vback, r + 1, CORECOLL_INT, p - 1, comm), "scatterv");
    CHECK(vback[r] == r * 1000 + r, "scatterv value");
    int ones[16], zeros[16], a2a_s[16], a2a_r[16];
    for (int q = 0; q < p; q++) ones[q] = 1, zeros[q] = q, a2a_s[q] = r * 10 + q;
    OK(corecoll_alltoallv(a2a_s, ones, zeros, CORECOLL_INT, a2a_r, ones, zeros, CORECOLL_INT, comm), "alltoallv");
    CHECK(a2a_r[p - 1] == (p - 1) * 10 + r, "alltoallv value");
    OK(corecoll_barrier(comm), "barrier");
    (void) y;
}

static void point_to_point(corecoll_comm_t *comm, int p, int r) {
    int rc;
    int next = (r + 1) % p, prev = (r + p - 1) % p;
    double out[3] = {r, r + 0.5, r + 0.25}, in[3] = {0};
    corecoll_status_t st;
    OK(corecoll_sendrecv(out, 3, CORECOLL_DOUBLE, next, 7, in, 3, CORECOLL_DOUBLE, prev, 7, comm, &st), "sendrecv");
    CHECK(in[1] == prev + 0.5 && st.source == prev && st.tag == 7, "sendrecv value and status");
    int got;
    OK(corecoll_get_count(&st, CORECOLL_DOUBLE, &got), "get_count");
    CHECK(got == 3, "get_count value");
    /* Every other rank sends to rank 0 with its rank as tag; rank 0 receives from any. */
    if (r != 0) {
        int32_t v = r;
        OK(corecoll_send(&v, 1, CORECOLL_INT32, 0, r, comm), "send");
    } else {
        int seen = 0;
        for (int k = 1; k < p; k++) {
            int32_t v = -1;
            OK(corecoll_probe(CORECOLL_ANY_SOURCE, CORECOLL_ANY_TAG, CORECOLL_INT32, comm, &st), "probe");
            CHECK(st.bytes == 4, "probe size");
            OK(corecoll_recv(&v, 1, CORECOLL_INT32, CORECOLL_ANY_SOURCE, CORECOLL_ANY_TAG, comm, &st), "recv any");
            CHECK(v == st.source && st.tag == v, "recv any value");
            seen |= 1 << v;
        }
        CHECK(seen == ((1 << p) - 2), "every sender seen once");
    }
    int32_t none = 42;
    OK(corecoll_recv(&none, 1, CORECOLL_INT32, CORECOLL_PROC_NULL, 0, comm, &st), "recv from PROC_NULL");
    CHECK(none == 42 && st.source == CORECOLL_PROC_NULL, "PROC_NULL leaves the buffer");
    OK(corecoll_send(&none, 1, CORECOLL_INT32, CORECOLL_PROC_NULL, 0, comm), "send to PROC_NULL");
    int flag = 1;
    OK(corecoll_iprobe(CORECOLL_ANY_SOURCE, 99, CORECOLL_INT32, comm, &flag, CORECOLL_STATUS_IGNORE), "iprobe");
    CHECK(flag == 0, "iprobe finds nothing");
    OK(corecoll_barrier(comm), "barrier after point-to-point");
}

static void requests(corecoll_comm_t *comm, int p, int r, corecoll_op_t catop) {
    int rc;
    corecoll_request_t *req[8];
    double x = r, y = r + 1;
    uint64_t c = digit(r), s = 0, e = 0;
    int32_t b = r == p - 1 ? 77 : 0, g[16], rs_in[16], rs_out = 0;
    for (int q = 0; q < p; q++) rs_in[q] = q + r;
    OK(corecoll_iallreduce(CORECOLL_IN_PLACE, &x, 1, CORECOLL_DOUBLE, CORECOLL_SUM, comm, &req[0]), "iallreduce");
    OK(corecoll_ibcast(&b, 1, CORECOLL_INT32, p - 1, comm, &req[1]), "ibcast");
    OK(corecoll_iscan(&c, &s, 1, CORECOLL_UINT64, catop, comm, &req[2]), "iscan");
    OK(corecoll_iexscan(&c, &e, 1, CORECOLL_UINT64, catop, comm, &req[3]), "iexscan");
    OK(corecoll_ireduce(r == 0 ? CORECOLL_IN_PLACE : &y, &y, 1, CORECOLL_DOUBLE, CORECOLL_MAX, 0, comm, &req[4]), "ireduce");
    int32_t mine = r * 5;
    OK(corecoll_iallgather(&mine, 1, CORECOLL_INT32, g, comm, &req[5]), "iallgather");
    OK(corecoll_ireduce_scatter_block(rs_in, &rs_out, 1, CORECOLL_INT32, CORECOLL_SUM, comm, &req[6]), "ireduce_scatter_block");
    OK(corecoll_ibarrier(comm, &req[7]), "ibarrier");
    int flag = 0;
    OK(corecoll_test(&req[7], &flag, CORECOLL_STATUS_IGNORE), "test");
    OK(corecoll_waitall(8, req, CORECOLL_STATUSES_IGNORE), "waitall");
    CHECK(req[0] == CORECOLL_REQUEST_NULL && req[7] == CORECOLL_REQUEST_NULL, "waitall frees the requests");
    CHECK(x == p * (p - 1) / 2.0, "iallreduce value");
    CHECK(b == 77, "ibcast value");
    CHECK(s == cat_range(0, r + 1) && (r == 0 || e == cat_range(0, r)), "iscan and iexscan values");
    CHECK(r != 0 || y == p, "ireduce value");
    CHECK(g[p - 1] == (p - 1) * 5, "iallgather value");
    CHECK(rs_out == r * p + p * (p - 1) / 2, "ireduce_scatter_block value");
    /* isend / irecv round a ring, tested until done. */
    int next = (r + 1) % p, prev = (r + p - 1) % p;
    int64_t out = r, in = -1;
    corecoll_request_t *sreq, *rreq;
    corecoll_status_t st;
    OK(corecoll_irecv(&in, 1, CORECOLL_INT64, prev, 3, comm, &rreq), "irecv");
    OK(corecoll_isend(&out, 1, CORECOLL_INT64, next, 3, comm, &sreq), "isend");
    flag = 0;
    while (!flag && rc == CORECOLL_SUCCESS) rc = corecoll_test(&rreq, &flag, &st);
    CHECK(rc == CORECOLL_SUCCESS && in == prev && st.source == prev && st.bytes == 8, "irecv value and status");
    OK(corecoll_wait(&sreq, CORECOLL_STATUS_IGNORE), "wait isend");
    OK(corecoll_wait(&sreq, CORECOLL_STATUS_IGNORE), "wait on a NULL request");
    /* Persistent: started three times on new inputs. */
    double pin = 0, pout = 0;
    corecoll_request_t *ar, *bc, *rd, *ag, *aa, *rsb, *bar;
    OK(corecoll_allreduce_init(&pin, &pout, 1, CORECOLL_DOUBLE, CORECOLL_SUM, comm, &ar), "allreduce_init");
    int32_t bval = 0, agin = 0, agout[16], aain[16], aaout[16], rsbin[16], rsbout = 0;
    int64_t rin = 0, rout = 0;
    OK(corecoll_bcast_init(&bval, 1, CORECOLL_INT32, 0, comm, &bc), "bcast_init");
    OK(corecoll_reduce_init(&rin, &rout, 1, CORECOLL_INT64, CORECOLL_SUM, p - 1, comm, &rd), "reduce_init");
    OK(corecoll_allgather_init(&agin, 1, CORECOLL_INT32, agout, comm, &ag), "allgather_init");
    OK(corecoll_alltoall_init(aain, 1, CORECOLL_INT32, aaout, comm, &aa), "alltoall_init");
    OK(corecoll_reduce_scatter_block_init(rsbin, &rsbout, 1, CORECOLL_INT32, CORECOLL_SUM, comm, &rsb), "reduce_scatter_block_init");
    OK(corecoll_barrier_init(comm, &bar), "barrier_init");
    for (int k = 1; k <= 3; k++) {
        pin = r * k, bval = r == 0 ? 10 * k : -1, rin = k, agin = r + k;
        for (int q = 0; q < p; q++) aain[q] = r * 100 + q + k, rsbin[q] = k;
        corecoll_request_t *all[7] = {ar, bc, rd, ag, aa, rsb, bar};
        for (int i = 0; i < 7; i++) OK(corecoll_start(&all[i]), "start");
        OK(corecoll_waitall(7, all, CORECOLL_STATUSES_IGNORE), "waitall persistent");
        CHECK(all[0] == ar, "a persistent request stays");
        CHECK(pout == k * p * (p - 1) / 2.0, "persistent allreduce value");
        CHECK(bval == 10 * k, "persistent bcast value");
        CHECK(r != p - 1 || rout == (int64_t) k * p, "persistent reduce value");
        CHECK(agout[p - 1] == p - 1 + k, "persistent allgather value");
        CHECK(aaout[0] == r + k, "persistent alltoall value");
        CHECK(rsbout == k * p, "persistent reduce_scatter_block value");
    }
    corecoll_request_t *pers[7] = {ar, bc, rd, ag, aa, rsb, bar};
    for (int i = 0; i < 7; i++) OK(corecoll_request_free(&pers[i]), "request_free");
    CHECK(pers[6] == CORECOLL_REQUEST_NULL, "request_free sets NULL");
}

static void communicators(corecoll_comm_t *comm, int p, int r) {
    int rc;
    corecoll_comm_t *half, *dup, *none;
    OK(corecoll_comm_split(comm, r % 2, p - r, &half), "comm_split");
    int hr = -1, hs = -1;
    OK(corecoll_comm_rank(half, &hr), "split rank");
    OK(corecoll_comm_size(half, &hs), "split size");
    int mates = (p + 1 - r % 2) / 2;
    CHECK(hs == mates && hr == mates - 1 - r / 2, "split size and order by key");
    int v = r, sum = 0;
    OK(corecoll_allreduce(&v, &sum, 1, CORECOLL_INT, CORECOLL_SUM, half), "split allreduce");
    int want = 0;
    for (int q = r % 2; q < p; q += 2) want += q;
    CHECK(sum == want, "split allreduce value");
    OK(corecoll_comm_dup(comm, &dup), "comm_dup");
    int d = r == 0 ? 5 : 0;
    OK(corecoll_bcast(&d, 1, CORECOLL_INT, 0, dup), "dup bcast");
    CHECK(d == 5, "dup bcast value");
    OK(corecoll_comm_split(comm, r == 0 ? CORECOLL_UNDEFINED : 1, 0, &none), "split undefined");
    CHECK((r == 0) == (none == NULL), "an undefined color gives NULL");
    if (none) OK(corecoll_comm_free(&none), "comm_free");

    /* Requests on a split and a dup, beside one on the joined communicator; the split is
       freed while its request is in flight, which still completes. */
    int hv = r + 1, hsum = 0, wv = 1, wsum = 0, pin = 0, pout = -1;
    corecoll_request_t *hreq, *wreq, *dreq;
    OK(corecoll_iallreduce(&hv, &hsum, 1, CORECOLL_INT, CORECOLL_SUM, half, &hreq), "split iallreduce");
    OK(corecoll_iallreduce(&wv, &wsum, 1, CORECOLL_INT, CORECOLL_SUM, comm, &wreq), "iallreduce beside a split's");
    OK(corecoll_allreduce_init(&pin, &pout, 1, CORECOLL_INT, CORECOLL_MAX, dup, &dreq), "dup allreduce_init");
    for (int k = 0; k < 3; k++) {
        pin = r + k;
        OK(corecoll_start(&dreq), "dup start");
        OK(corecoll_wait(&dreq, CORECOLL_STATUS_IGNORE), "dup wait");
        CHECK(pout == p - 1 + k, "dup persistent allreduce value");
    }
    OK(corecoll_request_free(&dreq), "dup request_free");
    OK(corecoll_wait(&wreq, CORECOLL_STATUS_IGNORE), "wait beside a split's request");
    CHECK(wsum == p, "iallreduce beside a split's value");
    OK(corecoll_comm_free(&half), "comm_free half");
    CHECK(half == NULL, "comm_free sets NULL");
    OK(corecoll_wait(&hreq, CORECOLL_STATUS_IGNORE), "wait on a freed split's request");
    CHECK(hsum == want + mates, "split iallreduce value");
    rc = corecoll_barrier(half);
    CHECK(rc == CORECOLL_ERR_HANDLE, "a freed communicator is a handle error");
    OK(corecoll_comm_free(&dup), "comm_free dup");
}

/* Mistakes a C caller can make, none of which fails the run. */
static void local_errors(corecoll_comm_t *comm, int p, int r) {
    int rc;
    double x = 1;
    rc = corecoll_allreduce(CORECOLL_IN_PLACE, &x, 1, 99, CORECOLL_SUM, comm);
    CHECK(rc == CORECOLL_ERR_TYPE, "an unknown type");
    rc = corecoll_allreduce(CORECOLL_IN_PLACE, &x, 1, CORECOLL_DOUBLE, 999, comm);
    CHECK(rc == CORECOLL_ERR_OP, "an unknown op");
    rc = corecoll_allreduce(CORECOLL_IN_PLACE, &x, 1, CORECOLL_DOUBLE, CORECOLL_BAND, comm);
    CHECK(rc == CORECOLL_ERR_OP, "a bitwise op on doubles");
    rc = corecoll_allreduce(CORECOLL_IN_PLACE, &x, -1, CORECOLL_DOUBLE, CORECOLL_SUM, comm);
    CHECK(rc == CORECOLL_ERR_COUNT, "a negative count");
    rc = corecoll_allreduce(CORECOLL_IN_PLACE, NULL, 2, CORECOLL_DOUBLE, CORECOLL_SUM, comm);
    CHECK(rc == CORECOLL_ERR_BUFFER, "a NULL buffer");
    rc = corecoll_allreduce(CORECOLL_IN_PLACE, (char *) &x + 1, 1, CORECOLL_DOUBLE, CORECOLL_SUM, comm);
    CHECK(rc == CORECOLL_ERR_BUFFER, "a misaligned buffer");
    rc = corecoll_barrier(NULL);
    CHECK(rc == CORECOLL_ERR_HANDLE, "a NULL communicator");
    CHECK(strlen(corecoll_last_error()) > 0, "the last error has a message");
    rc = corecoll_bcast(&x, 1, CORECOLL_DOUBLE, -3, comm);
    CHECK(rc == CORECOLL_ERR_RANK, "a negative root");
    rc = corecoll_wait(NULL, NULL);
    CHECK(rc == CORECOLL_ERR_BUFFER, "wait with no request slot");
    OK(corecoll_allreduce(CORECOLL_IN_PLACE, &x, 1, CORECOLL_DOUBLE, CORECOLL_SUM, comm), "the run goes on");
    CHECK(x == p, "and computes");
    (void) r;
}

/* A run that fails: counts that differ between the ranks are a mismatch on every rank. */
static void mismatch(corecoll_team_t *team, int p) {
#pragma omp parallel num_threads(p)
    {
        int r = omp_get_thread_num(), rc;
        corecoll_comm_t *comm;
        OK(corecoll_join(team, r, &comm), "join for the mismatch");
        double x[2] = {1, 1};
        rc = corecoll_allreduce(CORECOLL_IN_PLACE, x, r == 0 ? 1 : 2, CORECOLL_DOUBLE, CORECOLL_SUM, comm);
        CHECK(rc == CORECOLL_ERR_MISMATCH || rc == CORECOLL_ERR_ABORTED, "differing counts fail every rank");
        rc = corecoll_barrier(comm);
        CHECK(rc != CORECOLL_SUCCESS, "the failed run's later calls fail");
        OK(corecoll_leave(comm), "leave after a failed call");
    }
}

static void on_team(int p, corecoll_op_t catop) {
    int rc, r = -1;
    corecoll_team_t *team;
    OK(corecoll_team_create_timeout(p, 60.0, &team), "team_create");
    int size = 0;
    OK(corecoll_team_size(team, &size), "team_size");
    CHECK(size == p, "team_size value");
    for (int run = 0; run < 3; run++) {
#pragma omp parallel num_threads(p)
        {
            int r = omp_get_thread_num(), rc;
            corecoll_comm_t *comm;
            OK(corecoll_join(team, r, &comm), "join");
            int rank = -1, sz = -1;
            OK(corecoll_comm_rank(comm, &rank), "comm_rank");
            OK(corecoll_comm_size(comm, &sz), "comm_size");
            CHECK(rank == r && sz == p, "rank and size");
            collectives(comm, p, r, catop);
            point_to_point(comm, p, r);
            requests(comm, p, r, catop);
            communicators(comm, p, r);
            local_errors(comm, p, r);
            OK(corecoll_leave(comm), "leave");
        }
    }
    if (p > 1) mismatch(team, p);
    OK(corecoll_team_free(team), "team_free");
    rc = corecoll_team_free(team);
    CHECK(rc == CORECOLL_ERR_HANDLE, "a freed team");
    (void) r;
}

/* The door: a second join of a rank, a team freed while joined, a rank that never joins. */
static void door(void) {
    int p = 2, r = 0, rc;
    corecoll_team_t *team;
    OK(corecoll_team_create_timeout(2, 0.3, &team), "team_create with a timeout");
    corecoll_comm_t *comm, *again;
    OK(corecoll_join(team, 0, &comm), "join alone");
    rc = corecoll_join(team, 0, &again);
    CHECK(rc == CORECOLL_ERR_JOIN, "a second join of rank 0");
    rc = corecoll_join(team, 5, &again);
    CHECK(rc == CORECOLL_ERR_JOIN, "a rank out of range");
    rc = corecoll_team_free(team);
    CHECK(rc == CORECOLL_ERR_TEAM_BUSY, "a team freed while joined");
    double x = 1;
    rc = corecoll_allreduce(CORECOLL_IN_PLACE, &x, 1, CORECOLL_DOUBLE, CORECOLL_SUM, comm);
    CHECK(rc == CORECOLL_ERR_TIMEOUT || (rc == CORECOLL_ERR_ABORTED && strstr(corecoll_last_error(), "timed out")), "a rank that never joins: a timeout");
    /* The leave does not wait for rank 1 (it reports the timeout only if the run was given
     * up on it already). */
    rc = corecoll_leave(comm);
    CHECK(rc == CORECOLL_SUCCESS || rc == CORECOLL_ERR_TIMEOUT, "the leave");
    /* Joining again waits for the run left to end: after the timeout, it is given up on
     * rank 1, and the join is in the next run. */
    OK(corecoll_join(team, 0, &comm), "join again, after the timeout");
    OK(corecoll_leave(comm), "leave again");
    OK(corecoll_team_free(team), "team_free after");
    rc = corecoll_team_create(0, &team);
    CHECK(rc == CORECOLL_ERR_ZERO_RANKS, "a team of no ranks");
    CHECK(strcmp(corecoll_error_string(CORECOLL_ERR_TIMEOUT), "a wait timed out") == 0, "error_string");
    corecoll_op_t op = CORECOLL_SUM;
    rc = corecoll_op_free(&op);
    CHECK(rc == CORECOLL_ERR_OP, "freeing a built-in op");
}

int main(void) {
    int rc, p = 0, r = 0;
    corecoll_op_t catop;
    OK(corecoll_op_create(cat_op, 0, &catop), "op_create");
    int sizes[] = {1, 2, 3, 4, 7};
    for (unsigned i = 0; i < sizeof sizes / sizeof *sizes; i++) on_team(sizes[i], catop);
    door();
    OK(corecoll_op_free(&catop), "op_free");
    CHECK(catop == CORECOLL_OP_NULL, "op_free sets OP_NULL");
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
