/*
 * simulation._cstepgraph: the fast path of simulation/stepgraph.py and step.attribute.
 *
 *   build(ints, floats, link_index, last) -> (n_streams, gpu_stream, n_pools, pool_cap,
 *         kind, stream, duration, size, path_ptr, path_links, dep_ptr, dep_idx,
 *         acquire, release, label, path_weight)
 *
 * emits, as flat arrays (bytes holding int32 / float64), exactly the graph that
 * stepgraph.build(RankModel, links, last) builds task by task in Python: same tasks,
 * same order, same dependencies in the same order, same floating-point arithmetic.
 * Task names are not produced (the timeline takes them from stepgraph.task_names);
 * labels come as codes of stepgraph.LABELS. stepgraph.build is the
 * specification and tests hold both equal on generated rank models.
 *
 *   attribute(kind, stream, label, dep_ptr, dep_idx, start, end, makespan, gpu_stream,
 *             category_of_label, n_categories) -> tuple of seconds per category
 *
 * is step.attribute_reference on flat arrays (each GPU idle gap split along the chain of
 * what it waited for).
 *
 *   critical_path(kind, stream, dep_ptr, dep_idx, start, end) -> int32 bytes
 *
 * is step.critical_path on flat arrays (the timeline's critical tasks, first to last), and
 *
 *   timeline_rows(plan, stream_names, label_names, link_names, kind, stream, dep_ptr,
 *                 dep_idx, start, end, label, path_ptr, path_links, limit) -> list | None
 *
 * step.timeline's rows from those arrays and stepgraph.task_name_plan's names.
 *
 * Bad input raises simulation.scheduler.GraphError (unknown link) or ValueError;
 * nothing here may crash the process.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "_cshared.h"

enum { COMPUTE = 0, TRANSFER = 1 };
/* stepgraph.LABELS, in order */
enum { L_COMPUTE, L_ALLGATHER, L_FETCH_MISS, L_OFFLOAD, L_TP_ALLREDUCE, L_REDUCE_SCATTER,
       L_ALLREDUCE, L_OPTIMIZER, L_CPU_OPTIMIZER };
/* stepgraph.TIERS: where states live */
enum { T_NONE, T_CPU, T_NVME, T_CXL };
/* link_index order (stepgraph.LINK_NAMES) */
enum { K_NVLINK, K_NIC, K_PCIE_H2D, K_PCIE_D2H, K_DDR, K_NVME_READ, K_NVME_WRITE, K_CXL,
       K_NVME, K_CPU_ADAM, K_SW_UP, K_SW_DOWN, K_N };
static const char *LINK_NAMES[K_N] = {"nvlink", "nic", "pcie_h2d", "pcie_d2h", "ddr",
                                      "nvme_read", "nvme_write", "cxl", "nvme", "cpu_adam",
                                      "pcie_switch_up", "pcie_switch_down"};
enum { S_GPU, S_SYNC, S_NCCL, S_TP_NCCL, S_N };   /* "gpu", "sync", "nccl", "tp nccl" */
#define NONE (-1)
#define ADAM_BYTES_PER_PARAM 30.0
#define SUB_GROUP_ELEMENTS 1e9

typedef struct {
    int *data;
    Py_ssize_t n, cap;
} IVec;
typedef struct {
    double *data;
    Py_ssize_t n, cap;
} DVec;

static int ipush(IVec *v, int x) {
    if (v->n == v->cap) {
        Py_ssize_t cap = v->cap ? 2 * v->cap : 256;
        int *d = realloc(v->data, (size_t)cap * sizeof(int));
        if (!d) return -1;
        v->data = d;
        v->cap = cap;
    }
    v->data[v->n++] = x;
    return 0;
}

static int dpush(DVec *v, double x) {
    if (v->n == v->cap) {
        Py_ssize_t cap = v->cap ? 2 * v->cap : 256;
        double *d = realloc(v->data, (size_t)cap * sizeof(double));
        if (!d) return -1;
        v->data = d;
        v->cap = cap;
    }
    v->data[v->n++] = x;
    return 0;
}

/* The rank model (stepgraph.RankModel) and the graph being built. */
typedef struct {
    int layers, shard, replicas, dp, gpn, stage, tp, bwd_allreduces, prefetch_depth;
    int off_params, off_opt, off_act, shard_nic, dp_nic, shard_per_node, dp_per_node,
        units_per_layer, rs_per_layer, sync_fetch, overlap_grad_reduce, overlap_param_gather,
        tp_comm_overlap, replica_nic, replica_per_node, last;
    double fwd_s, bwd_s, head_s, unit_params, params_per_rank, param_bytes, grad_bytes,
        optimizer_state_bytes, tp_bytes, act_ckpt_bytes, miss_rate, hbm_bytes_per_s,
        gather_lat, reduce_lat, dp_ar_lat, dp_ar_factor, dp_gather_lat, replica_lat, tp_lat,
        bwd_fetch_factor, nvme_ww, fwd_cont, bwd_cont, fwd_cont_last, bwd_cont_last, tp_ar_factor,
        cpu_opt_bytes;
    int link[K_N];
    int stream_id[S_N], n_streams, zero3, n_units, last_rs;
    IVec kind, stream, pptr, plinks, dptr, didx, acq, rel, label, syncs;
    DVec dur, size, pw;
    int oom, bad_link;           /* bad_link: 1 + the missing link's K_ index, or 0 */
} B;

static int missing(B *b, int k) {
    b->bad_link = k + 1;
    return NONE;
}

/* One task; deps holds nd ids, NONE entries skipped (as TaskGraph._add drops None);
   w: the flow's weight on each path link (NULL: 1 each). */
static int add_w(B *b, int kind, int stream, double dur, double size, const int *path, int np_,
                 const double *w, const int *deps, int nd, int acquire, int release, int label) {
    int id = (int)b->kind.n;
    int s = NONE;
    if (kind == COMPUTE) {
        if (b->stream_id[stream] == NONE) b->stream_id[stream] = b->n_streams++;
        s = b->stream_id[stream];
    }
    int err = ipush(&b->kind, kind) | ipush(&b->stream, s) | dpush(&b->dur, dur) |
              dpush(&b->size, size) | ipush(&b->acq, acquire) | ipush(&b->rel, release) |
              ipush(&b->label, label);
    for (int k = 0; k < np_; k++)
        err |= ipush(&b->plinks, path[k]) | dpush(&b->pw, w ? w[k] : 1.0);
    if (kind == TRANSFER) {      /* stepgraph.StepGraph.transfer: the PCIe switch's uplink */
        int up = 0, down = 0;
        for (int k = 0; k < np_; k++) {
            up |= path[k] == b->link[K_PCIE_D2H] || path[k] == b->link[K_NVME_READ];
            down |= path[k] == b->link[K_PCIE_H2D] || path[k] == b->link[K_NVME_WRITE];
        }
        if (up && b->link[K_SW_UP] != NONE)
            err |= ipush(&b->plinks, b->link[K_SW_UP]) | dpush(&b->pw, 1.0);
        if (down && b->link[K_SW_DOWN] != NONE)
            err |= ipush(&b->plinks, b->link[K_SW_DOWN]) | dpush(&b->pw, 1.0);
    }
    err |= ipush(&b->pptr, (int)b->plinks.n);
    for (int k = 0; k < nd; k++)
        if (deps[k] != NONE) err |= ipush(&b->didx, deps[k]);
    err |= ipush(&b->dptr, (int)b->didx.n);
    if (err) { b->oom = 1; return NONE; }
    return id;
}

static int add(B *b, int kind, int stream, double dur, double size, const int *path, int np_,
               const int *deps, int nd, int acquire, int release, int label) {
    return add_w(b, kind, stream, dur, size, path, np_, NULL, deps, nd, acquire, release, label);
}

static int compute(B *b, int stream, double dur, const int *deps, int nd, int acquire,
                   int release, int label) {
    return add(b, COMPUTE, stream, dur, 0.0, NULL, 0, deps, nd, acquire, release, label);
}

static int transfer1(B *b, double size, int link, const int *deps, int nd, int acquire,
                     int label) {
    int path[1] = {b->link[link]};
    if (path[0] == NONE) return missing(b, link);
    return add(b, TRANSFER, 0, 0.0, size, path, 1, deps, nd, acquire, NONE, label);
}

/* stepgraph._tier_path: fills path and w, returns the path's length (0: a link is missing) */
static int tier_path(B *b, int tier, int in, int path[3], double w[3]) {
    int ks[3], np_ = 0;
    if (tier == T_NVME) {
        ks[np_] = in ? K_NVME_READ : K_NVME_WRITE; w[np_++] = 1.0;
        ks[np_] = K_NVME; w[np_++] = in ? 1.0 : b->nvme_ww;
    } else {
        ks[np_] = tier == T_CXL ? K_CXL : K_DDR; w[np_++] = 1.0;
    }
    ks[np_] = in ? K_PCIE_H2D : K_PCIE_D2H; w[np_++] = 1.0;
    for (int k = 0; k < np_; k++) {
        if (b->link[ks[k]] == NONE) { missing(b, ks[k]); return 0; }
        path[k] = b->link[ks[k]];
    }
    return np_;
}

static int transfer_tier(B *b, double size, int tier, int in, const int *deps, int nd,
                         int acquire, int label) {
    int path[3];
    double w[3];
    int np_ = tier_path(b, tier, in, path, w);
    if (!np_) return NONE;
    return add_w(b, TRANSFER, 0, 0.0, size, path, np_, w, deps, nd, acquire, NONE, label);
}

/* stepgraph._nvme: a transfer between DDR and the drives (its direction's link, then the
   drives, which reads and writes share) */
static int transfer_nvme(B *b, double size, int in, const int *deps, int nd, int label) {
    int first = in ? K_NVME_READ : K_NVME_WRITE;
    if (b->link[first] == NONE) return missing(b, first);
    if (b->link[K_NVME] == NONE) return missing(b, K_NVME);
    int path[2] = {b->link[first], b->link[K_NVME]};
    double w[2] = {1.0, in ? 1.0 : b->nvme_ww};
    return add_w(b, TRANSFER, 0, 0.0, size, path, 2, w, deps, nd, NONE, NONE, label);
}

/* stepgraph.ring */
static double ring(int allreduce, double nbytes, int n) {
    if (n <= 1) return 0.0;
    return (double)((allreduce ? 2 : 1) * (n - 1)) / (double)n * nbytes;
}

/* stepgraph.collective: per_node 0 means gpus per node */
static int collective(B *b, double volume, int nic, const int *deps, int nd, int label,
                      int acquire, int per_node, double latency, int stream) {
    int start = NONE;
    if (latency > 0) {       /* the latency task also starts the split below */
        start = compute(b, stream, latency, deps, nd, acquire, NONE, label);
        deps = &start;
        nd = 1;
        acquire = NONE;
    }
    int k = per_node ? per_node : b->gpn;
    if (!nic || k <= 1)
        return transfer1(b, volume, nic ? K_NIC : K_NVLINK, deps, nd, acquire, label);
    if (start == NONE) start = compute(b, S_SYNC, 0.0, deps, nd, acquire, NONE, label);
    int d[2] = {start, NONE};
    int a = transfer1(b, volume * (double)(k - 1) / (double)k, K_NVLINK, d, 1, NONE, label);
    int c = transfer1(b, volume / (double)k, K_NIC, d, 1, NONE, label);
    d[0] = a;
    d[1] = c;
    return compute(b, S_SYNC, 0.0, d, 2, NONE, NONE, label);
}

/* stepgraph.is_miss */
static int is_miss(int i, double rate) {
    return rate > 0 && floor((i + 1) * rate + 1e-12) > floor(i * rate + 1e-12);
}

static int fetch(B *b, int j, int bwd, int *prev_fetch, int prev_c) {
    int deps[3] = {*prev_fetch, NONE, NONE}, nd = 1, label = L_ALLGATHER;
    double fetch_params = b->unit_params / b->n_units;
    double full = fetch_params * b->param_bytes;
    double f = bwd ? b->bwd_fetch_factor : 1.0;
    double volume = ring(0, full, b->shard) * f;
    if (is_miss(j, b->miss_rate)) { deps[nd++] = prev_c; label = L_FETCH_MISS; }
    if (b->sync_fetch && b->last_rs != NONE) deps[nd++] = b->last_rs;
    int t;
    if (b->off_params != T_NONE) {
        int up = transfer_tier(b, fetch_params * b->param_bytes / b->shard * f, b->off_params, 1,
                               deps, nd, 0, label == L_FETCH_MISS ? L_FETCH_MISS : L_OFFLOAD);
        t = collective(b, volume, b->shard_nic, &up, 1, label, NONE, b->shard_per_node,
                       b->gather_lat * f, S_NCCL);
    } else {
        t = collective(b, volume, b->shard_nic, deps, nd, label, 0, b->shard_per_node,
                       b->gather_lat * f, S_NCCL);
    }
    *prev_fetch = t;
    return t;
}

/* stepgraph.build's layer_compute (tp_comm_overlap: each TP collective beside its chunk) */
static int layer_compute(B *b, double seconds, const int *deps, int nd, int release, int n_ar) {
    if (b->tp > 1 && n_ar) {
        int prev = NONE, comm = NONE, ov = b->tp_comm_overlap;
        for (int k = 0; k < n_ar; k++) {
            int pair[2] = {prev, comm};
            const int *d = k == 0 ? deps : pair;
            int dn = k == 0 ? nd : (ov ? 2 : 1);
            if (k > 0 && !ov) pair[0] = prev;
            int c = compute(b, S_GPU, seconds / n_ar, d, dn, NONE, k == n_ar - 1 ? release : NONE,
                            L_COMPUTE);
            double volume = b->tp_ar_factor > 0 ? b->tp_ar_factor * b->tp_bytes
                                                 : ring(1, b->tp_bytes, b->tp);
            comm = collective(b, volume, 0, ov ? d : &c, ov ? dn : 1,
                              L_TP_ALLREDUCE, NONE, 0, b->tp_lat, S_TP_NCCL);
            prev = ov ? c : comm;
        }
        if (ov) {
            int pair[2] = {prev, comm};
            return compute(b, S_SYNC, 0.0, pair, 2, NONE, NONE, L_COMPUTE);
        }
        return prev;
    }
    return compute(b, S_GPU, seconds, deps, nd, NONE, release, L_COMPUTE);
}

/* stepgraph._grads_to_nvme: the fp32 gradients to the drives with the optimizer states */
#define FP32_GRAD_BYTES 4.0
static void grads_to_nvme(B *b, int dep) {
    if (b->off_opt != T_NVME || b->oom || b->bad_link) return;
    int t = transfer_nvme(b, FP32_GRAD_BYTES * b->unit_params / b->shard, 0, &dep, 1, L_OFFLOAD);
    if (ipush(&b->syncs, t)) b->oom = 1;
}

/* stepgraph._grad_sync: appends to b->syncs */
static void grad_sync(B *b, int c, double grad_bytes) {
    int last = b->last;
    if (b->stage >= 2) {
        int n_rs = b->stage >= 3 ? b->rs_per_layer : 1, rs = NONE;
        for (int q = 0; q < n_rs; q++) {
            rs = collective(b, ring(0, grad_bytes / n_rs, b->shard), b->shard_nic, &c, 1,
                            L_REDUCE_SCATTER, NONE, b->shard_per_node, b->reduce_lat, S_NCCL);
            if (ipush(&b->syncs, rs)) b->oom = 1;
        }
        int tail = rs;
        if (last && b->replicas > 1) {
            tail = collective(b, ring(1, grad_bytes / b->shard, b->replicas), b->replica_nic, &rs, 1,
                              L_ALLREDUCE, NONE, b->replica_per_node, b->replica_lat, S_NCCL);
            if (ipush(&b->syncs, tail)) b->oom = 1;
        }
        b->last_rs = tail;       /* stepgraph._grad_sync's state["last_rs"] */
        if (last && b->off_opt != T_NONE) {
            int tier = b->off_opt == T_CXL ? T_CXL : T_CPU;
            int t = transfer_tier(b, grad_bytes / b->shard, tier, 0, &tail, 1, NONE, L_OFFLOAD);
            if (ipush(&b->syncs, t)) b->oom = 1;
            grads_to_nvme(b, t);
        }
    } else if (last && b->dp > 1) {
        double volume = b->dp_ar_factor > 0 ? b->dp_ar_factor * grad_bytes : ring(1, grad_bytes, b->dp);
        int t = collective(b, volume, b->dp_nic, &c, 1, L_ALLREDUCE, NONE, b->dp_per_node,
                           b->dp_ar_lat, S_NCCL);
        if (ipush(&b->syncs, t)) b->oom = 1;
    } else if (last && b->off_opt != T_NONE) {
        int t = transfer_tier(b, grad_bytes / b->shard, T_CPU, 0, &c, 1, NONE, L_OFFLOAD);
        if (ipush(&b->syncs, t)) b->oom = 1;
        grads_to_nvme(b, t);
    }
}

/* stepgraph._optimizer */
static void optimizer(B *b, int last_c) {
    if (ipush(&b->syncs, last_c)) { b->oom = 1; return; }
    const int *deps = b->syncs.data;
    int nd = (int)b->syncs.n;
    double n = b->params_per_rank / b->shard;
    int where = b->off_opt, done;
    if (where == T_NONE) {
        done = compute(b, S_GPU, n * ADAM_BYTES_PER_PARAM / b->hbm_bytes_per_s, deps, nd, NONE,
                       NONE, L_OPTIMIZER);
    } else {
        double c = ceil(n / SUB_GROUP_ELEMENTS);
        long chunks = c > 1 ? (long)c : 1;
        double per = n / (double)chunks;
        int prev_read = NONE, prev_cpu = NONE, *cdeps = NULL;
        IVec tail = {0};
        int staged = where == T_NVME || where == T_CXL;
        cdeps = malloc((size_t)(nd + 2) * sizeof(int));
        if (!cdeps) { b->oom = 1; return; }
        for (long j = 0; j < chunks && !b->oom && !b->bad_link; j++) {
            int ncd;
            if (staged) {
                memcpy(cdeps, deps, (size_t)nd * sizeof(int));
                cdeps[nd] = prev_read;
                prev_read = where == T_NVME
                    ? transfer_nvme(b, per * (b->optimizer_state_bytes + FP32_GRAD_BYTES), 1, cdeps,
                                    nd + 1, L_OFFLOAD)
                    : transfer1(b, per * b->optimizer_state_bytes, K_CXL, cdeps, nd + 1, NONE,
                                L_OFFLOAD);
                cdeps[0] = prev_read;
                cdeps[1] = prev_cpu;
                ncd = 2;
            } else {
                memcpy(cdeps, deps, (size_t)nd * sizeof(int));
                cdeps[nd] = prev_cpu;
                ncd = nd + 1;
            }
            if (b->link[K_DDR] == NONE) { missing(b, K_DDR); break; }
            {   /* the DDR share, and the cores' rate when the node gives them */
                int path[2] = {b->link[K_DDR], b->link[K_CPU_ADAM]};
                prev_cpu = add(b, TRANSFER, 0, 0.0, per * b->cpu_opt_bytes, path,
                               path[1] == NONE ? 1 : 2, cdeps, ncd, NONE, NONE, L_CPU_OPTIMIZER);
            }
            if (staged) {
                int t = where == T_NVME
                    ? transfer_nvme(b, per * b->optimizer_state_bytes, 0, &prev_cpu, 1, L_OFFLOAD)
                    : transfer1(b, per * b->optimizer_state_bytes, K_CXL, &prev_cpu, 1, NONE,
                                L_OFFLOAD);
                if (ipush(&tail, t)) b->oom = 1;
            }
        }
        free(cdeps);
        done = prev_cpu;
        if (b->off_params == T_NONE) {
            done = transfer1(b, n * b->param_bytes, K_PCIE_H2D, &prev_cpu, 1, NONE, L_OFFLOAD);
        } else if (b->off_params == T_NVME) {
            int t = transfer_nvme(b, n * b->param_bytes, 0, &prev_cpu, 1, L_OFFLOAD);
            if (ipush(&tail, t)) b->oom = 1;
        }
        if (tail.n && !b->oom) {
            if (ipush(&tail, done)) b->oom = 1;
            else done = compute(b, S_GPU, 0.0, tail.data, (int)tail.n, NONE, NONE, L_COMPUTE);
        }
        free(tail.data);
    }
    if ((b->stage == 1 || b->stage == 2) && b->dp > 1 && !b->overlap_param_gather)
        collective(b, ring(0, b->params_per_rank * b->param_bytes, b->dp), b->dp_nic, &done, 1,
                   L_ALLGATHER, NONE, b->dp_per_node, b->dp_gather_lat, S_NCCL);
}

/* stepgraph.build */
static void build_graph(B *b) {
    int zero3 = b->stage >= 3, release = zero3 ? 0 : NONE;
    int nu = zero3 ? b->units_per_layer : 1;
    int deferred = !b->overlap_grad_reduce && b->stage < 2;
    b->n_units = nu;
    double fwd_x = b->last ? b->fwd_cont_last : b->fwd_cont;
    double bwd_x = b->last ? b->bwd_cont_last : b->bwd_cont;
    double grad_bytes = b->unit_params * b->grad_bytes;
    int prev_c = NONE, prev_fetch = NONE, prev_act = NONE;
    int *act_out = malloc((size_t)(b->layers > 0 ? b->layers : 1) * sizeof(int));
    int *gathers = malloc((size_t)(b->layers > 0 ? b->layers : 1) * sizeof(int));
    if (!act_out || !gathers) { free(act_out); free(gathers); b->oom = 1; return; }
    /* --overlap-param-gather: a layer's share of the parameter all-gather before it */
    int pg = b->last && b->overlap_param_gather && (b->stage == 1 || b->stage == 2) && b->dp > 1;
    double share = ring(0, b->params_per_rank * b->param_bytes / (b->layers > 0 ? b->layers : 1), b->dp);
    for (int i = 0, prev = NONE; pg && i < b->layers && !b->oom && !b->bad_link; i++)
        prev = gathers[i] = collective(b, share, b->dp_nic, &prev, 1, L_ALLGATHER, NONE,
                                       b->dp_per_node, b->dp_gather_lat, S_NCCL);
    for (int i = 0; i < b->layers && !b->oom && !b->bad_link; i++) {
        for (int u = 0; u < nu && !b->oom && !b->bad_link; u++) {
            int deps[3] = {prev_c, NONE, NONE}, nd = 1;
            if (zero3) deps[nd++] = fetch(b, i * nu + u, 0, &prev_fetch, prev_c);
            if (pg && u == 0) deps[nd++] = gathers[i];
            prev_c = layer_compute(b, b->fwd_s / nu + fwd_x, deps, nd, release, u == nu - 1 ? 2 : 0);
        }
        act_out[i] = NONE;
        if (b->off_act != T_NONE && i < b->layers - 1) {    /* the last layer's stays on the GPU */
            int path[2] = {b->link[K_DDR], b->link[K_PCIE_D2H]};
            if (path[0] == NONE || path[1] == NONE) { missing(b, path[0] == NONE ? K_DDR : K_PCIE_D2H); break; }
            act_out[i] = add(b, TRANSFER, 0, 0.0, b->act_ckpt_bytes, path, 2, &prev_c, 1, NONE,
                             NONE, L_OFFLOAD);
        }
    }
    if (b->head_s != 0 && !b->oom && !b->bad_link)
        prev_c = compute(b, S_GPU, b->head_s, &prev_c, 1, NONE, NONE, L_COMPUTE);
    /* two activation slots: layer i's copy back waits for layer i+2's backward (stepgraph.build) */
    int done1 = prev_c, done2 = prev_c;
    for (int i = b->layers - 1; i >= 0 && !b->oom && !b->bad_link; i--) {
        for (int u = nu - 1; u >= 0 && !b->oom && !b->bad_link; u--) {
            int deps[3] = {prev_c, NONE, NONE}, nd = 1;
            if (zero3) deps[nd++] = fetch(b, i * nu + u, 1, &prev_fetch, prev_c);
            if (act_out[i] != NONE && u == nu - 1) {
                int path[2] = {b->link[K_DDR], b->link[K_PCIE_H2D]};
                int d[3] = {act_out[i], prev_act, done2};
                if (path[1] == NONE) { missing(b, K_PCIE_H2D); break; }
                prev_act = add(b, TRANSFER, 0, 0.0, b->act_ckpt_bytes, path, 2, d, 3, NONE, NONE,
                               L_OFFLOAD);
                deps[nd++] = prev_act;
            }
            prev_c = layer_compute(b, b->bwd_s / nu + bwd_x, deps, nd, release,
                                   u == 0 ? b->bwd_allreduces : 0);
        }
        if (b->oom || b->bad_link) break;
        done2 = done1;
        done1 = prev_c;
        if (!deferred) grad_sync(b, prev_c, grad_bytes);
    }
    /* no overlap: every layer's sync after the last backward (stepgraph.build) */
    for (int i = b->layers - 1; deferred && i >= 0 && !b->oom && !b->bad_link; i--)
        grad_sync(b, prev_c, grad_bytes);
    free(act_out);
    free(gathers);
    if (b->last && !b->oom && !b->bad_link) optimizer(b, prev_c);
}

static PyObject *as_bytes(const void *data, Py_ssize_t n, size_t item) {
    return PyBytes_FromStringAndSize(data ? (const char *)data : "", n * (Py_ssize_t)item);
}

static PyObject *build(PyObject *self, PyObject *args) {
    B b;
    memset(&b, 0, sizeof b);
    PyObject *link_obj, *result = NULL;
    if (!PyArg_ParseTuple(args, "(iiiiiiiiiiiiiiiiiiiiiiii)(ddddddddddddddddddddddddddd)Op",
                          &b.layers, &b.shard, &b.replicas, &b.dp, &b.gpn, &b.stage, &b.tp,
                          &b.bwd_allreduces, &b.prefetch_depth, &b.off_params, &b.off_opt,
                          &b.off_act, &b.shard_nic, &b.dp_nic, &b.shard_per_node, &b.dp_per_node,
                          &b.units_per_layer, &b.rs_per_layer, &b.sync_fetch, &b.overlap_grad_reduce,
                          &b.overlap_param_gather, &b.tp_comm_overlap, &b.replica_nic,
                          &b.replica_per_node, &b.fwd_s, &b.bwd_s, &b.head_s, &b.unit_params, &b.params_per_rank,
                          &b.param_bytes, &b.grad_bytes, &b.optimizer_state_bytes, &b.tp_bytes,
                          &b.act_ckpt_bytes, &b.miss_rate, &b.hbm_bytes_per_s, &b.gather_lat,
                          &b.reduce_lat, &b.dp_ar_lat, &b.dp_ar_factor, &b.dp_gather_lat,
                          &b.replica_lat, &b.tp_lat, &b.bwd_fetch_factor, &b.nvme_ww, &b.fwd_cont,
                          &b.bwd_cont, &b.fwd_cont_last, &b.bwd_cont_last, &b.tp_ar_factor, &b.cpu_opt_bytes,
                          &link_obj,
                          &b.last))
        return NULL;
    if (b.layers < 0 || b.shard < 1 || b.replicas < 1 || b.dp < 1 || b.gpn < 1 || b.tp < 1 ||
        b.shard_per_node < 0 || b.dp_per_node < 0 || b.units_per_layer < 1 || b.rs_per_layer < 1 ||
        b.sync_fetch < 0 || b.sync_fetch > 1 || b.overlap_param_gather < 0 || b.overlap_param_gather > 1 ||
        b.tp_comm_overlap < 0 || b.tp_comm_overlap > 1 ||
        b.replica_nic < 0 || b.replica_nic > 1 || b.replica_per_node < 0 ||
        b.bwd_allreduces < 1 || b.prefetch_depth < 0 || b.off_params < 0 || b.off_params > T_CXL ||
        b.off_opt < 0 || b.off_opt > T_CXL || b.off_act < 0 || b.off_act > T_CXL ||
        !(b.cpu_opt_bytes >= 0)) {
        PyErr_SetString(PyExc_ValueError, "rank model out of range");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(link_obj, "link_index must be a sequence");
    if (!seq) return NULL;
    if (PySequence_Fast_GET_SIZE(seq) != K_N) {
        Py_DECREF(seq);
        PyErr_Format(PyExc_ValueError, "link_index must hold %d indices", K_N);
        return NULL;
    }
    for (int k = 0; k < K_N; k++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(seq, k));
        if (v == -1 && PyErr_Occurred()) { Py_DECREF(seq); return NULL; }
        b.link[k] = (int)v;
    }
    Py_DECREF(seq);
    for (int k = 0; k < S_N; k++) b.stream_id[k] = NONE;
    b.last_rs = NONE;
    b.oom = (ipush(&b.pptr, 0) | ipush(&b.dptr, 0)) != 0;
    if (!b.oom) build_graph(&b);
    if (b.oom) {
        PyErr_NoMemory();
    } else if (b.bad_link) {
        char msg[96];
        snprintf(msg, sizeof msg, "the step needs link '%s', which this node lacks",
                 LINK_NAMES[b.bad_link - 1]);
        graph_error(msg);
    } else {
        int pool_cap = 1 + b.prefetch_depth;
        int zero3 = b.stage >= 3;
        result = Py_BuildValue(
            "iiiNNNNNNNNNNNNN", b.n_streams, b.stream_id[S_GPU], zero3 ? 1 : 0,
            as_bytes(&pool_cap, zero3 ? 1 : 0, sizeof(int)),
            as_bytes(b.kind.data, b.kind.n, sizeof(int)),
            as_bytes(b.stream.data, b.stream.n, sizeof(int)),
            as_bytes(b.dur.data, b.dur.n, sizeof(double)),
            as_bytes(b.size.data, b.size.n, sizeof(double)),
            as_bytes(b.pptr.data, b.pptr.n, sizeof(int)),
            as_bytes(b.plinks.data, b.plinks.n, sizeof(int)),
            as_bytes(b.dptr.data, b.dptr.n, sizeof(int)),
            as_bytes(b.didx.data, b.didx.n, sizeof(int)),
            as_bytes(b.acq.data, b.acq.n, sizeof(int)),
            as_bytes(b.rel.data, b.rel.n, sizeof(int)),
            as_bytes(b.label.data, b.label.n, sizeof(int)),
            as_bytes(b.pw.data, b.pw.n, sizeof(double)));
    }
    IVec *iv[] = {&b.kind, &b.stream, &b.pptr, &b.plinks, &b.dptr, &b.didx, &b.acq, &b.rel,
                  &b.label, &b.syncs};
    for (size_t k = 0; k < sizeof iv / sizeof *iv; k++) free(iv[k]->data);
    free(b.dur.data);
    free(b.size.data);
    free(b.pw.data);
    return result;
}

/* ---- attribution: step.attribute_reference on flat arrays ---- */

#define BLAME_STEPS 10000

/* The latest-ending dependency of task i (ties: higher id); i has at least one. */
static int latest_dep(const int *dptr, const int *didx, const double *end, int i) {
    int best = didx[dptr[i]];
    for (int j = dptr[i] + 1; j < dptr[i + 1]; j++) {
        int d = didx[j];
        if (end[d] > end[best] || (end[d] == end[best] && d > best)) best = d;
    }
    return best;
}

/* Split the idle interval [lo, hi] along the chain of latest dependencies from c back:
   each task gets the part from its latest dependency's end to where the later part
   begins; plain compute hands its part back; what is left is a stall. */
static void charge(const int *kind, const int *label, const int *dptr, const int *didx,
                   const double *end, const int *cat, int stall, double *out,
                   int c, double lo, double hi) {
    double owed = 0.0;
    for (int seen = 0; seen < BLAME_STEPS; seen++) {
        int has_deps = dptr[c + 1] > dptr[c];
        double seg_lo = lo;
        if (has_deps) {
            double e = end[latest_dep(dptr, didx, end, c)];
            if (e > lo) seg_lo = e;
        }
        double part = hi > seg_lo ? hi - seg_lo : 0.0;
        if (kind[c] != COMPUTE || label[c] != L_COMPUTE) {
            out[cat[label[c]]] += owed + part;
            owed = 0.0;
        } else {
            owed += part;
        }
        hi = seg_lo;
        if (hi <= lo || !has_deps) break;
        c = latest_dep(dptr, didx, end, c);
    }
    out[stall] += owed + (hi > lo ? hi - lo : 0.0);
}

static PyObject *attribute(PyObject *self, PyObject *args) {
    PyObject *o[8];
    double makespan;
    int gpu, ncat, stall;
    if (!PyArg_ParseTuple(args, "OOOOOOOdiOii", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &o[6], &makespan, &gpu, &o[7], &ncat, &stall))
        return NULL;
    static const char fmts[] = "iiiiiddi";
    static const char *names[] = {"kind", "stream", "label", "dep_ptr", "dep_idx", "start",
                                  "end", "category_of_label"};
    Buf b[8];
    memset(b, 0, sizeof b);
    PyObject *result = NULL;
    int *comp = NULL;
    double *out = NULL;
    for (int k = 0; k < 8; k++)
        if (get_buf(o[k], &b[k], fmts[k], 0, names[k]) < 0) goto done;
    Py_ssize_t n = b[0].view.len / (Py_ssize_t)sizeof(int);
    const int *kind = b[0].view.buf, *stream = b[1].view.buf, *label = b[2].view.buf;
    const int *dptr = b[3].view.buf, *didx = b[4].view.buf, *cat = b[7].view.buf;
    const double *start = b[5].view.buf, *end = b[6].view.buf;
    Py_ssize_t nlab = b[7].view.len / (Py_ssize_t)sizeof(int);
    Py_ssize_t ndep = b[4].view.len / (Py_ssize_t)sizeof(int);
    if (b[1].view.len != b[0].view.len || b[2].view.len != b[0].view.len ||
        b[3].view.len != (n + 1) * (Py_ssize_t)sizeof(int) ||
        b[5].view.len != n * (Py_ssize_t)sizeof(double) ||
        b[6].view.len != n * (Py_ssize_t)sizeof(double) || ncat < 1 || stall < 0 || stall >= ncat) {
        PyErr_SetString(PyExc_ValueError, "attribute: array lengths do not match");
        goto done;
    }
    if (dptr[0] != 0 || dptr[n] != ndep) {
        PyErr_SetString(PyExc_ValueError, "attribute: bad dependency pointers");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (dptr[i + 1] < dptr[i] || label[i] < 0 || label[i] >= nlab ||
            cat[label[i]] < 0 || cat[label[i]] >= ncat) {
            PyErr_SetString(PyExc_ValueError, "attribute: bad dependency pointer or label");
            goto done;
        }
    }
    for (Py_ssize_t j = 0; j < ndep; j++)
        if (didx[j] < 0 || didx[j] >= n) {
            PyErr_SetString(PyExc_ValueError, "attribute: a dependency names an unknown task");
            goto done;
        }
    comp = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    out = calloc((size_t)ncat, sizeof(double));
    if (!comp || !out) { PyErr_NoMemory(); goto done; }
    Py_ssize_t nc = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (kind[i] != COMPUTE || stream[i] != gpu) continue;
        /* insertion sort by (start, id): the GPU's tasks come nearly in order */
        Py_ssize_t k = nc++;
        while (k > 0 && start[comp[k - 1]] > start[i]) { comp[k] = comp[k - 1]; k--; }
        comp[k] = (int)i;
    }
    double t = 0.0;
    for (Py_ssize_t k = 0; k < nc; k++) {
        int i = comp[k];
        if (start[i] - t > 1e-15 && dptr[i + 1] > dptr[i])
            charge(kind, label, dptr, didx, end, cat, stall, out,
                   latest_dep(dptr, didx, end, i), t, start[i]);
        out[cat[label[i]]] += end[i] - start[i];
        if (end[i] > t) t = end[i];
    }
    if (makespan - t > 1e-15 && n > 0) {
        int last = 0;
        for (Py_ssize_t i = 1; i < n; i++) if (end[i] > end[last]) last = (int)i;
        charge(kind, label, dptr, didx, end, cat, stall, out, last, t, makespan);
    }
    result = PyTuple_New(ncat);
    if (result)
        for (int c = 0; c < ncat; c++) PyTuple_SET_ITEM(result, c, PyFloat_FromDouble(out[c]));

done:
    for (int k = 0; k < 8; k++) if (b[k].held) PyBuffer_Release(&b[k].view);
    free(comp);
    free(out);
    return result;
}

/* ---- the timeline: step.critical_path and step.timeline's rows on flat arrays ---- */

/* The graph a timeline reads: kind, stream, dep_ptr, dep_idx, start, end (then, for the
   rows, label, path_ptr, path_links). */
typedef struct {
    Py_ssize_t n, ndep;
    const int *kind, *stream, *dptr, *didx;
    const double *start, *end;
} TGraph;

/* Views 0-5 of b as a TGraph, checked; -1 with an exception set. */
static int tgraph(Buf *b, TGraph *g) {
    g->n = b[0].view.len / (Py_ssize_t)sizeof(int);
    g->ndep = b[3].view.len / (Py_ssize_t)sizeof(int);
    g->kind = b[0].view.buf;
    g->stream = b[1].view.buf;
    g->dptr = b[2].view.buf;
    g->didx = b[3].view.buf;
    g->start = b[4].view.buf;
    g->end = b[5].view.buf;
    Py_ssize_t n = g->n;
    if (b[1].view.len != b[0].view.len || b[2].view.len != (n + 1) * (Py_ssize_t)sizeof(int) ||
        b[4].view.len != n * (Py_ssize_t)sizeof(double) ||
        b[5].view.len != n * (Py_ssize_t)sizeof(double) || g->dptr[0] != 0 ||
        g->dptr[n] != g->ndep) {
        PyErr_SetString(PyExc_ValueError, "timeline: array lengths do not match");
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (g->dptr[i + 1] < g->dptr[i]) {
            PyErr_SetString(PyExc_ValueError, "timeline: bad dependency pointers");
            return -1;
        }
    for (Py_ssize_t j = 0; j < g->ndep; j++)
        if (g->didx[j] < 0 || g->didx[j] >= n) {
            PyErr_SetString(PyExc_ValueError, "timeline: a dependency names an unknown task");
            return -1;
        }
    return 0;
}

/* step.critical_path: from the task that ends last (the first of equals), step back to
   whichever candidate (a dependency, or the task before it on its compute stream in
   (start, id) order) ended last (ties: higher id) no later than it started, within 1e-9
   relative. Fills path (room for n + 1) first to last; returns its length, -1 when out
   of memory. n > 0. */
static Py_ssize_t crit_path(const TGraph *g, int *path) {
    Py_ssize_t n = g->n;
    const double *start = g->start, *end = g->end;
    int ns = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (g->kind[i] == COMPUTE && g->stream[i] + 1 > ns) ns = g->stream[i] + 1;
    int *prev = malloc((size_t)n * sizeof(int));
    int *order = malloc((size_t)n * sizeof(int));
    Py_ssize_t *at = calloc(2 * ((size_t)ns + 1), sizeof(Py_ssize_t)), *begin = at + ns + 1;
    if (!prev || !order || !at) { free(prev); free(order); free(at); return -1; }
    /* each stream's compute tasks in (start, id) order: bucketed by stream in id order,
       each bucket kept sorted by insertion (a stream's tasks start nearly in id order) */
    for (Py_ssize_t i = 0; i < n; i++) {
        prev[i] = NONE;
        if (g->kind[i] == COMPUTE && g->stream[i] >= 0) begin[g->stream[i] + 1]++;
    }
    for (int s = 0; s < ns; s++) begin[s + 1] += begin[s];
    for (int s = 0; s <= ns; s++) at[s] = begin[s];       /* at[s]: where stream s's next goes */
    for (Py_ssize_t i = 0; i < n; i++)
        if (g->kind[i] == COMPUTE && g->stream[i] >= 0) {
            Py_ssize_t k = at[g->stream[i]]++, lo = begin[g->stream[i]];
            while (k > lo && start[order[k - 1]] > start[i]) { order[k] = order[k - 1]; k--; }
            order[k] = (int)i;
        }
    for (int s = 0; s < ns; s++)
        for (Py_ssize_t k = begin[s] + 1; k < begin[s + 1]; k++) prev[order[k]] = order[k - 1];
    free(order);
    free(at);
    int i = 0;
    for (Py_ssize_t j = 1; j < n; j++) if (end[j] > end[i]) i = (int)j;
    Py_ssize_t len = 0;
    path[len++] = i;
    while (len <= n) {
        double lim = start[i] + 1e-9 * (start[i] > 1.0 ? start[i] : 1.0);
        int best = NONE;
        for (int j = g->dptr[i]; j <= g->dptr[i + 1]; j++) {
            int c = j < g->dptr[i + 1] ? g->didx[j] : prev[i];
            if (c == NONE || !(end[c] <= lim)) continue;
            if (best == NONE || end[c] > end[best] || (end[c] == end[best] && c > best)) best = c;
        }
        if (best == NONE) break;
        i = best;
        path[len++] = i;
    }
    for (Py_ssize_t a = 0, z = len - 1; a < z; a++, z--) {
        int t = path[a];
        path[a] = path[z];
        path[z] = t;
    }
    free(prev);
    return len;
}

static PyObject *critical_path(PyObject *self, PyObject *args) {
    PyObject *o[6];
    if (!PyArg_ParseTuple(args, "OOOOOO", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5]))
        return NULL;
    static const char fmts[] = "iiiidd";
    static const char *names[] = {"kind", "stream", "dep_ptr", "dep_idx", "start", "end"};
    Buf b[6];
    memset(b, 0, sizeof b);
    PyObject *result = NULL;
    int *path = NULL;
    TGraph g;
    for (int k = 0; k < 6; k++)
        if (get_buf(o[k], &b[k], fmts[k], 0, names[k]) < 0) goto done;
    if (tgraph(b, &g) < 0) goto done;
    if (g.n == 0) { result = PyBytes_FromStringAndSize("", 0); goto done; }
    path = malloc((size_t)(g.n + 1) * sizeof(int));
    Py_ssize_t len = path ? crit_path(&g, path) : -1;
    if (len < 0) { PyErr_NoMemory(); goto done; }
    result = as_bytes(path, len, sizeof(int));
done:
    for (int k = 0; k < 6; k++) if (b[k].held) PyBuffer_Release(&b[k].view);
    free(path);
    return result;
}

/* A task's name from stepgraph.task_name_plan: `name` with its first U+0000 replaced by
   `layer`, or `name` itself when layer is NULL or it has none. New reference. */
static PyObject *plan_name(PyObject *name, PyObject *layer) {
    if (!layer) { Py_INCREF(name); return name; }
    Py_ssize_t len = PyUnicode_GET_LENGTH(name);
    Py_ssize_t at = PyUnicode_FindChar(name, 0, 0, len, 1);
    if (at == -2) return NULL;
    if (at == -1) { Py_INCREF(name); return name; }
    Py_ssize_t nl = PyUnicode_GET_LENGTH(layer);
    if (PyUnicode_KIND(name) == PyUnicode_1BYTE_KIND && PyUnicode_KIND(layer) == PyUnicode_1BYTE_KIND &&
        PyUnicode_IS_ASCII(name) && PyUnicode_IS_ASCII(layer)) {
        PyObject *out = PyUnicode_New(len - 1 + nl, 127);
        if (!out) return NULL;
        Py_UCS1 *d = PyUnicode_1BYTE_DATA(out);
        const Py_UCS1 *src = PyUnicode_1BYTE_DATA(name);
        memcpy(d, src, (size_t)at);
        memcpy(d + at, PyUnicode_1BYTE_DATA(layer), (size_t)nl);
        memcpy(d + at + nl, src + at + 1, (size_t)(len - at - 1));
        return out;
    }
    PyObject *head = PyUnicode_Substring(name, 0, at), *tail = PyUnicode_Substring(name, at + 1, len);
    PyObject *mid = head ? PyUnicode_Concat(head, layer) : NULL;
    PyObject *out = mid && tail ? PyUnicode_Concat(mid, tail) : NULL;
    Py_XDECREF(head);
    Py_XDECREF(tail);
    Py_XDECREF(mid);
    return out;
}

/* step.timeline's rows: {name, lane, kind, start_s, end_s, critical} per task among the
   first `limit` whose end - start is not <= 0; a compute task's lane is its stream's
   name, a transfer's its links' (" > " between them). plan ([(layer or None, [name])]
   in task order) and stream_names (one per stream) are stepgraph.task_name_plan's;
   None when they do not fit the graph (another count of tasks, a stream it lacks): the
   caller builds the graph instead. */
static PyObject *timeline_rows(PyObject *self, PyObject *args) {
    PyObject *plan, *streams, *label_names, *link_names, *o[9];
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "O!O!O!O!OOOOOOOOOn", &PyList_Type, &plan, &PyList_Type,
                          &streams, &PyTuple_Type, &label_names, &PyList_Type, &link_names,
                          &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7], &o[8], &limit))
        return NULL;
    static const char fmts[] = "iiiiddiii";
    static const char *bnames[] = {"kind", "stream", "dep_ptr", "dep_idx", "start", "end",
                                   "label", "path_ptr", "path_links"};
    Buf b[9];
    memset(b, 0, sizeof b);
    PyObject *result = NULL, *rows = NULL, *sep = NULL, *key[6] = {NULL};
    char *crit = NULL;
    int *path = NULL;
    TGraph g;
    for (int k = 0; k < 9; k++)
        if (get_buf(o[k], &b[k], fmts[k], 0, bnames[k]) < 0) goto done;
    if (tgraph(b, &g) < 0) goto done;
    Py_ssize_t n = g.n, nlab = PyTuple_GET_SIZE(label_names), nlinks = PyList_GET_SIZE(link_names);
    const int *label = b[6].view.buf, *pptr = b[7].view.buf, *plinks = b[8].view.buf;
    Py_ssize_t npl = b[8].view.len / (Py_ssize_t)sizeof(int);
    if (b[6].view.len != n * (Py_ssize_t)sizeof(int) ||
        b[7].view.len != (n + 1) * (Py_ssize_t)sizeof(int) || pptr[0] != 0 || pptr[n] != npl) {
        PyErr_SetString(PyExc_ValueError, "timeline: array lengths do not match");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (pptr[i + 1] < pptr[i] || label[i] < 0 || label[i] >= nlab) {
            PyErr_SetString(PyExc_ValueError, "timeline: bad path pointer or label");
            goto done;
        }
    for (Py_ssize_t j = 0; j < npl; j++)
        if (plinks[j] < 0 || plinks[j] >= nlinks) {
            PyErr_SetString(PyExc_ValueError, "timeline: a path names an unknown link");
            goto done;
        }
    Py_ssize_t np_ = PyList_GET_SIZE(plan), total = 0;
    for (Py_ssize_t k = 0; k < np_; k++) {
        PyObject *seg = PyList_GET_ITEM(plan, k);
        if (!PyTuple_Check(seg) || PyTuple_GET_SIZE(seg) != 2 ||
            !PyList_Check(PyTuple_GET_ITEM(seg, 1)) ||
            (PyTuple_GET_ITEM(seg, 0) != Py_None && !PyUnicode_Check(PyTuple_GET_ITEM(seg, 0)))) {
            PyErr_SetString(PyExc_TypeError, "timeline: plan must hold (layer or None, [name]) pairs");
            goto done;
        }
        PyObject *list = PyTuple_GET_ITEM(seg, 1);
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(list); j++)
            if (!PyUnicode_Check(PyList_GET_ITEM(list, j))) {
                PyErr_SetString(PyExc_TypeError, "timeline: a task name must be a str");
                goto done;
            }
        total += PyList_GET_SIZE(list);
    }
    int same = total == n;
    for (Py_ssize_t i = 0; i < n && same; i++)
        same = g.kind[i] != COMPUTE ||
               (g.stream[i] >= 0 && g.stream[i] < PyList_GET_SIZE(streams));
    if (!same) {
        result = Py_None;
        Py_INCREF(result);
        goto done;
    }
    crit = calloc((size_t)(n > 0 ? n : 1), 1);
    path = malloc((size_t)(n + 1) * sizeof(int));
    if (!crit || !path) { PyErr_NoMemory(); goto done; }
    if (n > 0) {
        Py_ssize_t len = crit_path(&g, path);
        if (len < 0) { PyErr_NoMemory(); goto done; }
        for (Py_ssize_t k = 0; k < len; k++) crit[path[k]] = 1;
    }
    static const char *keys[6] = {"name", "lane", "kind", "start_s", "end_s", "critical"};
    for (int k = 0; k < 6; k++)
        if (!(key[k] = PyUnicode_InternFromString(keys[k]))) goto done;
    if (!(sep = PyUnicode_FromString(" > ")) || !(rows = PyList_New(0))) goto done;
    Py_ssize_t m = limit < n ? (limit > 0 ? limit : 0) : n;
    Py_ssize_t seg = 0, pos = 0;         /* the plan's place of task i */
    for (Py_ssize_t i = 0; i < m; i++, pos++) {
        PyObject *names = PyTuple_GET_ITEM(PyList_GET_ITEM(plan, seg), 1);
        while (pos >= PyList_GET_SIZE(names)) {
            pos = 0;
            names = PyTuple_GET_ITEM(PyList_GET_ITEM(plan, ++seg), 1);
        }
        if (g.end[i] - g.start[i] <= 0) continue;
        PyObject *layer = PyTuple_GET_ITEM(PyList_GET_ITEM(plan, seg), 0);
        PyObject *lane, *row = NULL, *v[6];
        if (g.kind[i] == COMPUTE) {
            lane = PyList_GET_ITEM(streams, g.stream[i]);
            Py_INCREF(lane);
        } else {
            if (pptr[i + 1] - pptr[i] == 1) {
                lane = PyList_GET_ITEM(link_names, plinks[pptr[i]]);
                Py_INCREF(lane);
            } else {
                PyObject *parts = PyList_New(pptr[i + 1] - pptr[i]);
                if (!parts) goto done;
                for (int j = pptr[i]; j < pptr[i + 1]; j++) {
                    PyObject *x = PyList_GET_ITEM(link_names, plinks[j]);
                    Py_INCREF(x);
                    PyList_SET_ITEM(parts, j - pptr[i], x);
                }
                lane = PyUnicode_Join(sep, parts);
                Py_DECREF(parts);
                if (!lane) goto done;
            }
        }
        v[1] = lane;
        v[0] = plan_name(PyList_GET_ITEM(names, pos), layer == Py_None ? NULL : layer);
        if (!v[0]) { Py_DECREF(lane); goto done; }
        v[2] = PyTuple_GET_ITEM(label_names, label[i]);
        Py_INCREF(v[2]);
        v[3] = PyFloat_FromDouble(g.start[i]);
        v[4] = PyFloat_FromDouble(g.end[i]);
        v[5] = crit[i] ? Py_True : Py_False;
        Py_INCREF(v[5]);
        int err = !v[3] || !v[4] || !(row = _PyDict_NewPresized(6));
        for (int k = 0; k < 6 && !err; k++) err = PyDict_SetItem(row, key[k], v[k]) < 0;
        if (!err) err = PyList_Append(rows, row) < 0;
        for (int k = 0; k < 6; k++) Py_XDECREF(v[k]);
        Py_XDECREF(row);
        if (err) goto done;
    }
    result = rows;
    rows = NULL;
done:
    for (int k = 0; k < 9; k++) if (b[k].held) PyBuffer_Release(&b[k].view);
    for (int k = 0; k < 6; k++) Py_XDECREF(key[k]);
    Py_XDECREF(sep);
    Py_XDECREF(rows);
    free(crit);
    free(path);
    return result;
}

static PyMethodDef methods[] = {
    {"build", build, METH_VARARGS,
     "build(ints, floats, link_index, last) -> flat step graph; see stepgraph.build_arrays."},
    {"attribute", attribute, METH_VARARGS,
     "attribute(kind, stream, label, dep_ptr, dep_idx, start, end, makespan, gpu_stream, "
     "category_of_label, n_categories, stall_category) -> seconds per category; see "
     "step.attribute_reference."},
    {"critical_path", critical_path, METH_VARARGS,
     "critical_path(kind, stream, dep_ptr, dep_idx, start, end) -> int32 bytes: the tasks "
     "on the critical path, first to last; see step.critical_path."},
    {"timeline_rows", timeline_rows, METH_VARARGS,
     "timeline_rows(plan, stream_names, label_names, link_names, kind, stream, dep_ptr, "
     "dep_idx, start, end, label, path_ptr, path_links, limit) -> step.timeline's rows, or "
     "None when plan and stream_names do not fit the graph; see step.step_timeline."},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {{0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cstepgraph",
    "C fast path of simulation.stepgraph (build a step's task graph) and step.attribute.",
    0, methods, slots, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__cstepgraph(void) { return PyModuleDef_Init(&module); }
