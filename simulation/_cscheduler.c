/*
 * simulation._cscheduler: the fast path of simulation/scheduler.py.
 *
 * What it does, in Python terms (simulate_reference is the specification):
 *
 *   def simulate(link_bw, n_streams, pool_cap, kind, stream, duration, size,
 *                path_ptr, path_links, path_weight, dep_ptr, dep_idx, acquire, release,
 *                out_start, out_end, out_link_busy, out_link_bytes, out_stream_busy):
 *       while tasks remain:
 *           start the lowest-id ready task that may start, again and again
 *           rates = max-min fair shares of the running flows (progressive filling,
 *                   each flow using path_weight x its rate of each link it crosses)
 *           advance to the next compute end or flow end; finish what ended
 *       return makespan
 *
 * Inputs are C-contiguous buffers (float64 'd', int32 'i'); outputs are writable
 * float64 buffers the caller allocates. The same operations run in the same order as
 * the Python reference so that both give the same floating-point results. Bad input
 * raises simulation.scheduler.GraphError; nothing here may crash the process.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "_cshared.h"

#define REL 1e-12
enum { COMPUTE = 0, TRANSFER = 1 };

#define LEN(b, T) ((Py_ssize_t)((b).view.len / (Py_ssize_t)sizeof(T)))

typedef struct {
    Py_ssize_t n, nl, ns, np;
    const double *bw, *dur, *size, *pw;
    const int *cap, *kind, *stream, *pptr, *plinks, *dptr, *didx, *acq, *rel;
    double *start, *end, *lbusy, *lbytes, *sbusy;
} Graph;

/* Max-min fair rates of the running flows, as scheduler.max_min_rates. */
static void max_min(const Graph *g, const int *flows, Py_ssize_t nf, double *rate,
                    double *rem, long long *count, double *wsum, char *frozen) {
    for (Py_ssize_t l = 0; l < g->nl; l++) { rem[l] = g->bw[l]; count[l] = 0; wsum[l] = 0.0; }
    for (Py_ssize_t k = 0; k < nf; k++) {
        int f = flows[k];
        frozen[k] = 0;
        for (int j = g->pptr[f]; j < g->pptr[f + 1]; j++) {
            count[g->plinks[j]]++;
            wsum[g->plinks[j]] += g->pw[j];
        }
    }
    Py_ssize_t nfrozen = 0;
    while (nfrozen < nf) {
        double best = INFINITY;
        for (Py_ssize_t l = 0; l < g->nl; l++)
            if (count[l] > 0 && rem[l] / wsum[l] < best) best = rem[l] / wsum[l];
        for (Py_ssize_t l = 0; l < g->nl; l++) {
            if (!(count[l] > 0 && rem[l] / wsum[l] <= best * (1 + REL))) continue;
            for (Py_ssize_t k = 0; k < nf; k++) {
                if (frozen[k]) continue;
                int f = flows[k], uses = 0;
                for (int j = g->pptr[f]; j < g->pptr[f + 1]; j++)
                    if (g->plinks[j] == l) { uses = 1; break; }
                if (!uses) continue;
                rate[k] = best;
                frozen[k] = 1;
                nfrozen++;
                for (int j = g->pptr[f]; j < g->pptr[f + 1]; j++) {
                    rem[g->plinks[j]] -= best * g->pw[j];
                    count[g->plinks[j]]--;
                    wsum[g->plinks[j]] -= g->pw[j];
                }
            }
        }
    }
}

static int check(const Graph *g) {
    char msg[160];
    for (Py_ssize_t l = 0; l < g->nl; l++)
        if (!(g->bw[l] > 0) || !isfinite(g->bw[l])) {
            snprintf(msg, sizeof msg, "link %zd has bandwidth %g; it must be > 0", l, g->bw[l]);
            graph_error(msg); return -1;
        }
    for (Py_ssize_t p = 0; p < g->np; p++)
        if (g->cap[p] < 1) { graph_error("every pool needs at least one slot"); return -1; }
    if (g->pptr[0] != 0 || g->dptr[0] != 0) { graph_error("CSR pointers must start at 0"); return -1; }
    for (Py_ssize_t i = 0; i < g->n; i++) {
        if (!isfinite(g->dur[i]) || g->dur[i] < 0) {
            snprintf(msg, sizeof msg, "task %zd has duration %g; it must be finite and >= 0", i, g->dur[i]);
            graph_error(msg); return -1;
        }
        if (!isfinite(g->size[i]) || g->size[i] < 0) {
            snprintf(msg, sizeof msg, "task %zd has size %g; it must be finite and >= 0", i, g->size[i]);
            graph_error(msg); return -1;
        }
        if (g->pptr[i + 1] < g->pptr[i] || g->dptr[i + 1] < g->dptr[i]) {
            graph_error("CSR pointers must not decrease"); return -1;
        }
        if (g->kind[i] == COMPUTE) {
            if (g->stream[i] < 0 || g->stream[i] >= g->ns) {
                snprintf(msg, sizeof msg, "task %zd names unknown stream %d", i, g->stream[i]);
                graph_error(msg); return -1;
            }
        } else if (g->kind[i] == TRANSFER) {
            if (g->pptr[i + 1] == g->pptr[i]) {
                snprintf(msg, sizeof msg, "transfer task %zd crosses no link", i);
                graph_error(msg); return -1;
            }
        } else { graph_error("task kind must be 0 (compute) or 1 (transfer)"); return -1; }
        if (g->acq[i] < -1 || g->acq[i] >= g->np || g->rel[i] < -1 || g->rel[i] >= g->np) {
            snprintf(msg, sizeof msg, "task %zd names unknown pool", i);
            graph_error(msg); return -1;
        }
    }
    return 0;
}

static PyObject *simulate(PyObject *self, PyObject *args) {
    PyObject *o[19];
    int n_streams;
    if (!PyArg_ParseTuple(args, "OiOOOOOOOOOOOOOOOOO", &o[0], &n_streams, &o[1], &o[2], &o[3],
                          &o[4], &o[5], &o[6], &o[7], &o[8], &o[9], &o[10], &o[11], &o[12],
                          &o[13], &o[14], &o[15], &o[16], &o[17]))
        return NULL;
    static const char fmts[] = "diiiddiiiiiidddddd";
    static const char *names[] = {"link_bw", "pool_cap", "kind", "stream", "duration", "size",
                                  "path_ptr", "path_links", "dep_ptr", "dep_idx", "acquire",
                                  "release", "start", "end", "link_busy", "link_bytes",
                                  "stream_busy", "path_weight"};
    Buf b[18];
    memset(b, 0, sizeof b);
    PyObject *result = NULL;
    int *pos = NULL, *head = NULL, *next = NULL, *ready = NULL, *free_ = NULL;
    char *ended = NULL;
    int *stask = NULL, *flows = NULL, *busy_links = NULL;
    double *remaining = NULL, *rate = NULL, *rem = NULL, *wsum = NULL;
    long long *count = NULL;
    char *frozen = NULL, *busy = NULL;

    for (int k = 0; k < 18; k++)
        if (get_buf(o[k], &b[k], fmts[k], k >= 12 && k < 17, names[k]) < 0) goto done;

    Graph g;
    g.nl = LEN(b[0], double); g.np = LEN(b[1], int); g.n = LEN(b[2], int); g.ns = n_streams;
    g.bw = b[0].view.buf; g.cap = b[1].view.buf; g.kind = b[2].view.buf; g.stream = b[3].view.buf;
    g.dur = b[4].view.buf; g.size = b[5].view.buf; g.pptr = b[6].view.buf; g.plinks = b[7].view.buf;
    g.dptr = b[8].view.buf; g.didx = b[9].view.buf; g.acq = b[10].view.buf; g.rel = b[11].view.buf;
    g.start = b[12].view.buf; g.end = b[13].view.buf; g.lbusy = b[14].view.buf;
    g.lbytes = b[15].view.buf; g.sbusy = b[16].view.buf; g.pw = b[17].view.buf;
    Py_ssize_t n = g.n;
    if (n_streams < 0 || LEN(b[3], int) != n || LEN(b[4], double) != n || LEN(b[5], double) != n ||
        LEN(b[6], int) != n + 1 || LEN(b[8], int) != n + 1 || LEN(b[10], int) != n ||
        LEN(b[11], int) != n || LEN(b[12], double) != n || LEN(b[13], double) != n ||
        LEN(b[14], double) != g.nl || LEN(b[15], double) != g.nl || LEN(b[16], double) != g.ns) {
        graph_error("array lengths do not match the number of tasks, links or streams");
        goto done;
    }
    if (check(&g) < 0) goto done;
    if (g.pptr[n] != LEN(b[7], int) || g.dptr[n] != LEN(b[9], int)) {
        graph_error("CSR pointers do not match their index arrays"); goto done;
    }
    if (LEN(b[17], double) != LEN(b[7], int)) {
        graph_error("path_weight must hold one finite weight > 0 per path link"); goto done;
    }
    for (Py_ssize_t j = 0; j < g.pptr[n]; j++)
        if (!(g.pw[j] > 0) || !isfinite(g.pw[j])) {
            graph_error("path_weight must hold one finite weight > 0 per path link"); goto done;
        }
    {   /* branch-free scans: a step has more dependencies than tasks */
        unsigned bad = 0;
        for (Py_ssize_t j = 0; j < g.pptr[n]; j++) bad |= (unsigned)g.plinks[j] >= (unsigned)g.nl;
        if (bad) { graph_error("a transfer names an unknown link"); goto done; }
        for (Py_ssize_t j = 0; j < g.dptr[n]; j++) bad |= (unsigned)g.didx[j] >= (unsigned)n;
        if (bad) { graph_error("a dependency names an unknown task"); goto done; }
    }

    Py_ssize_t nn = n > 0 ? n : 1, nl1 = g.nl > 0 ? g.nl : 1;
    pos = calloc(nn, sizeof(int)); head = calloc(nn, sizeof(int));
    next = calloc(nn, sizeof(int)); ended = calloc(nn, 1);
    ready = calloc(nn, sizeof(int)); free_ = calloc(g.np + 1, sizeof(int));
    stask = calloc(g.ns + 1, sizeof(int)); flows = calloc(nn, sizeof(int));
    remaining = calloc(nn, sizeof(double)); rate = calloc(nn, sizeof(double));
    rem = calloc(nl1, sizeof(double)); count = calloc(nl1, sizeof(long long));
    wsum = calloc(nl1, sizeof(double));
    frozen = calloc(nn, 1); busy = calloc(nl1, 1); busy_links = calloc(nl1, sizeof(int));
    if (!pos || !head || !next || !ended || !ready || !free_ || !stask || !flows ||
        !remaining || !rate || !rem || !count || !wsum || !frozen || !busy || !busy_links) { PyErr_NoMemory(); goto done; }

    /* Dependencies by watching (no successor lists: a step's optimizer sub-groups each
     * list every layer's gradient reduction, so the edges grow as layers^2 while the
     * tasks grow as layers). A task waits on one unfinished dependency at a time, the
     * last listed one not yet ended: it sits on that task's watch list (head/next,
     * intrusive: a task is on at most one list). When that dependency ends, the task
     * steps down its list past every dependency that has ended and watches the next one,
     * or becomes ready. pos[i] only decreases: each edge is looked at once, in memory
     * order, and where the last listed dependency ends last (the builder lists the
     * previous sub-group last) a task is woken once whatever its in-degree. The ready
     * set at every instant is the reference's (all dependencies ended), so the
     * schedule is bit-identical. */
    for (Py_ssize_t i = 0; i < n; i++) { head[i] = -1; pos[i] = g.dptr[i + 1]; }
    for (Py_ssize_t p = 0; p < g.np; p++) free_[p] = g.cap[p];
    for (Py_ssize_t s = 0; s < g.ns; s++) { stask[s] = -1; g.sbusy[s] = 0; }
    for (Py_ssize_t l = 0; l < g.nl; l++) { g.lbusy[l] = 0; g.lbytes[l] = 0; }
    Py_ssize_t nready = 0, nflows = 0, done_n = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        g.start[i] = g.end[i] = NAN;
        remaining[i] = g.size[i];
        if (pos[i] == g.dptr[i]) ready[nready++] = (int)i;
        else { int d = g.didx[pos[i] - 1]; next[i] = head[d]; head[d] = (int)i; }
    }
    double now = 0.0;
    int flows_changed = 1;
    Py_ssize_t nbusy = 0;

#define FINISH(i) do {                                                      \
        int _i = (i);                                                       \
        g.end[_i] = now; done_n++; ended[_i] = 1;                           \
        if (g.rel[_i] >= 0) free_[g.rel[_i]]++;                             \
        int _w = head[_i];                                                  \
        head[_i] = -1;                                                      \
        while (_w != -1) {                                                  \
            int _nx = next[_w], _p = pos[_w] - 1, _lo = g.dptr[_w];         \
            while (_p > _lo && ended[g.didx[_p - 1]]) _p--;                 \
            pos[_w] = _p;                                                   \
            if (_p == _lo) {                 /* ready: keep ready sorted */ \
                Py_ssize_t _k = nready++;                                   \
                while (_k > 0 && ready[_k - 1] > _w) { ready[_k] = ready[_k - 1]; _k--; } \
                ready[_k] = _w;                                             \
            } else {                                                        \
                int _d = g.didx[_p - 1];                                    \
                next[_w] = head[_d]; head[_d] = _w;                         \
            }                                                               \
            _w = _nx;                                                       \
        }                                                                   \
    } while (0)

    while (done_n < n) {
        for (;;) {                                   /* start the lowest-id startable task */
            Py_ssize_t k = 0;
            int i = -1;
            for (; k < nready; k++) {
                int c = ready[k], p = g.acq[c];
                if (p >= 0 && free_[p] == 0) continue;
                if (g.kind[c] == COMPUTE && stask[g.stream[c]] != -1) continue;
                i = c;
                break;
            }
            if (i < 0) break;
            memmove(&ready[k], &ready[k + 1], (size_t)(nready - k - 1) * sizeof(int));
            nready--;
            if (g.acq[i] >= 0) free_[g.acq[i]]--;
            g.start[i] = now;
            if (g.kind[i] == COMPUTE) {
                if (g.dur[i] == 0) FINISH(i);
                else { stask[g.stream[i]] = i; g.sbusy[g.stream[i]] += g.dur[i]; }
            } else if (remaining[i] == 0) {
                FINISH(i);
            } else {
                Py_ssize_t m = nflows++;             /* keep flows sorted by id */
                while (m > 0 && flows[m - 1] > i) { flows[m] = flows[m - 1]; m--; }
                flows[m] = i;
                flows_changed = 1;
            }
        }
        if (done_n == n) break;
        /* The rates are a function of the set of running flows alone: recomputed only
         * when a flow started or ended (an event where only computes end keeps them). */
        if (flows_changed) {
            max_min(&g, flows, nflows, rate, rem, count, wsum, frozen);
            nbusy = 0;                               /* the links the flows cross */
            memset(busy, 0, (size_t)nl1);
            for (Py_ssize_t k = 0; k < nflows; k++)
                for (int j = g.pptr[flows[k]]; j < g.pptr[flows[k] + 1]; j++)
                    if (!busy[g.plinks[j]]) { busy[g.plinks[j]] = 1; busy_links[nbusy++] = g.plinks[j]; }
        }
        flows_changed = 0;
        double t_next = INFINITY;
        for (Py_ssize_t s = 0; s < g.ns; s++)
            if (stask[s] != -1 && g.start[stask[s]] + g.dur[stask[s]] < t_next)
                t_next = g.start[stask[s]] + g.dur[stask[s]];
        for (Py_ssize_t k = 0; k < nflows; k++)
            if (now + remaining[flows[k]] / rate[k] < t_next) t_next = now + remaining[flows[k]] / rate[k];
        if (isinf(t_next)) { graph_error("no task can make progress: the task graph has a dependency cycle or a pool slot is never released"); goto done; }
        double dt = t_next - now;
        double tol = REL * (t_next > 1.0 ? t_next : 1.0) * 1e3;
        for (Py_ssize_t k = 0; k < nflows; k++) {
            int f = flows[k];
            double moved = rate[k] * dt;
            for (int j = g.pptr[f]; j < g.pptr[f + 1]; j++)
                g.lbytes[g.plinks[j]] += moved * g.pw[j];
            remaining[f] -= moved;
        }
        for (Py_ssize_t b2 = 0; b2 < nbusy; b2++) g.lbusy[busy_links[b2]] += dt;
        now = t_next;
        for (Py_ssize_t s = 0; s < g.ns; s++) {
            int i = stask[s];
            if (i != -1 && g.start[i] + g.dur[i] <= now + tol) { stask[s] = -1; FINISH(i); }
        }
        Py_ssize_t kept = 0;
        for (Py_ssize_t k = 0; k < nflows; k++) {
            int f = flows[k];
            if (now + remaining[f] / rate[k] <= now + tol || remaining[f] <= 0) {
                remaining[f] = 0.0;
                FINISH(f);
            } else {
                flows[kept++] = f;
            }
        }
        if (kept != nflows) flows_changed = 1;
        nflows = kept;
    }
#undef FINISH
    double makespan = 0.0;
    for (Py_ssize_t i = 0; i < n; i++) if (g.end[i] > makespan) makespan = g.end[i];
    result = PyFloat_FromDouble(makespan);

done:
    for (int k = 0; k < 18; k++) if (b[k].held) PyBuffer_Release(&b[k].view);
    free(pos); free(head); free(next); free(ended); free(ready); free(free_);
    free(stask); free(flows); free(remaining); free(rate); free(rem); free(count); free(wsum);
    free(frozen); free(busy); free(busy_links);
    return result;
}

static PyMethodDef methods[] = {
    {"simulate", simulate, METH_VARARGS,
     "simulate(link_bw, n_streams, pool_cap, kind, stream, duration, size, path_ptr, "
     "path_links, dep_ptr, dep_idx, acquire, release, out_start, out_end, out_link_busy, "
     "out_link_bytes, out_stream_busy, path_weight) -> makespan_s\n\n"
     "Run a flat task graph; see simulation/scheduler.py for the semantics."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {{0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cscheduler",
    "C fast path of simulation.scheduler (max-min fair discrete-event simulation).",
    0, methods, slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cscheduler(void) { return PyModuleDef_Init(&module); }
