"""
The nodempi benchmark sweep against mpi4py: comm.Barrier, Bcast, Reduce,
Allreduce, Gather, Scatter, Allgather and Alltoall, and (asked for by name
with --colls) Gatherv, Scatterv, Allgatherv, Alltoallv, Alltoallw,
Reduce_scatter, Reduce_scatter_block, Scan and Exscan, through mpi4py's
buffer (uppercase) methods on numpy float64 arrays (MPI.SUM, root 0, equal
counts and packed displacements for the v and w forms), one JSON line per
point on rank 0's stdout.

It is bench/ompi/osu_coll.c in Python, written as an mpi4py user would write
the calls (numpy arrays passed straight in, None where MPI ignores a buffer,
the [buffer, counts, displs, type] specs of the v and w forms built per
call), so that the difference from the C program is what mpi4py costs. Same
scheme as bench/ompi/osu_coll.c and bench/lib/sweep.mjs (keep the three in
step: same phases, warm-up rules, timing, flags and JSON fields):
  1. correctness: receive buffers poisoned with NaN, one call, every element
     checked (a wrong result prints to stderr and comm.Abort(2)s);
  2. probe: one call, rank 0's wall time broadcast;
  3. warm-up: batches of 1, 2, 4, ... untimed calls until warm ms have
     passed on rank 0 (at most max_warm calls; an untimed Bcast after each
     batch carries the decision); c = min(probe, last batch mean) broadcast.
     The first size of each collective warms up for first_warm ms (200), as
     in the JavaScript harness and the C program;
  4. timed: N = clamp(target / c, min_iters, max_iters) calls in up to 8
     batches (rank 0 stops early, by an untimed Bcast after a batch, once the
     point has taken 4x target), each call timed on its own with MPI.Wtime
     and followed by an untimed comm.Barrier (OSU style); barrier itself is
     timed as loops of back-to-back barriers;
  5. the last call's output checked again;
  6. per-rank mean, gathered at rank 0, reported as the max over ranks.
`bytes` is one rank's message: the buffer for bcast/reduce/allreduce/scan/
exscan, one rank's block for gather/scatter/allgather/alltoall, their v and
w forms and reduceScatter(Block) (whose send buffer is nranks blocks).

MPI is initialised by mpi4py's import with its defaults (MPI_THREAD_MULTIPLE
is requested), as every mpi4py program gets it.

Run it with a python3 whose mpi4py is built against the MPI library of the
launcher (Debian's python3-mpi4py and python3-numpy: Open MPI);
bench/backends.mjs finds one on PATH:
  mpirun --allow-run-as-root -n 2 python3 bench/mpi4py/osu_coll.py \
      [--colls a,b] [--sizes 8,64] [--warm-ms 50] [--first-warm-ms 200] [--target-ms 150]
      [--max-warm 1000000] [--min-iters 2] [--max-iters 200000] [--label mpi4py]
"""
import argparse
import math
import sys

import numpy as np
from mpi4py import MPI

BASE = ['barrier', 'bcast', 'reduce', 'allreduce', 'gather', 'scatter', 'allgather', 'alltoall']
VCOLLS = ['gatherv', 'scatterv', 'allgatherv', 'alltoallv', 'alltoallw', 'reduceScatter', 'reduceScatterBlock', 'scan',
          'exscan']
SIZES = [8, 64, 1024, 16384, 262144, 1048576, 4194304, 16777216]

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
nranks = comm.Get_size()
wtime = MPI.Wtime
barrier = comm.Barrier
SUM = MPI.SUM
DOUBLE = MPI.DOUBLE


# ---- data patterns (small integers, so every SUM is exact in doubles) ----
def val(r, i):
    return (r + 1) * 65536.0 + (i & 65535)


def sum_val(n, i):
    return 65536.0 * (n * (n + 1) // 2) + n * (i & 65535)


def a2a_val(s, d, n, i):
    return (s * n + d + 1) * 65536.0 + (i & 65535)


def rs_val(d, n, i):
    return 65536.0 * (n * (n * (n - 1) // 2) + n * (d + 1)) + n * (i & 65535)


def scan_val(r, i):
    return 65536.0 * ((r + 1) * (r + 2) // 2) + (r + 1) * (i & 65535)


def exscan_val(r, i):
    return 65536.0 * (r * (r + 1) // 2) + r * (i & 65535)


class Point:
    """Buffers of one (collective, size): the arrays, and the v/w layout made once per point."""

    def __init__(self, coll, count):
        n, P = count, nranks
        idx = np.arange(n, dtype=np.int64)
        self.coll, self.count, self.idx = coll, count, idx
        self.send = self.recv = None
        self.counts = [n] * P
        self.displs = [r * n for r in range(P)]
        self.byte_displs = [r * n * 8 for r in range(P)]
        self.types = [DOUBLE] * P
        if coll == 'barrier':
            pass
        elif coll == 'bcast':
            self.recv = np.empty(n)
        elif coll in ('reduce', 'allreduce', 'scan', 'exscan'):
            self.send = val(rank, idx)
            self.recv = np.empty(n)
        elif coll in ('gather', 'allgather', 'gatherv', 'allgatherv'):
            self.send = val(rank, idx)
            self.recv = np.empty(n * P)
        elif coll in ('scatter', 'scatterv'):
            if rank == 0:
                self.send = np.concatenate([val(d, idx) for d in range(P)])
            self.recv = np.empty(n)
        elif coll in ('alltoall', 'alltoallv', 'alltoallw', 'reduceScatter', 'reduceScatterBlock'):
            self.send = np.concatenate([a2a_val(rank, d, P, idx) for d in range(P)])
            self.recv = np.empty(n * P if coll.startswith('alltoall') else n)

    def call(self):
        """The collective as a function of no arguments: the calls an mpi4py program makes."""
        c, s, r = self.coll, self.send, self.recv
        root = rank == 0
        counts, displs = self.counts, self.displs
        if c == 'barrier':
            return comm.Barrier
        if c == 'bcast':
            return lambda: comm.Bcast(r, root=0)
        if c == 'reduce':
            rr = r if root else None
            return lambda: comm.Reduce(s, rr, op=SUM, root=0)
        if c == 'allreduce':
            return lambda: comm.Allreduce(s, r, op=SUM)
        if c == 'gather':
            rr = r if root else None
            return lambda: comm.Gather(s, rr, root=0)
        if c == 'scatter':
            return lambda: comm.Scatter(s, r, root=0)
        if c == 'allgather':
            return lambda: comm.Allgather(s, r)
        if c == 'alltoall':
            return lambda: comm.Alltoall(s, r)
        if c == 'gatherv':
            if root:
                return lambda: comm.Gatherv(s, [r, counts, displs, DOUBLE], root=0)
            return lambda: comm.Gatherv(s, None, root=0)
        if c == 'scatterv':
            if root:
                return lambda: comm.Scatterv([s, counts, displs, DOUBLE], r, root=0)
            return lambda: comm.Scatterv(None, r, root=0)
        if c == 'allgatherv':
            return lambda: comm.Allgatherv(s, [r, counts, displs, DOUBLE])
        if c == 'alltoallv':
            return lambda: comm.Alltoallv([s, counts, displs, DOUBLE], [r, counts, displs, DOUBLE])
        if c == 'alltoallw':
            bd, types = self.byte_displs, self.types
            return lambda: comm.Alltoallw([s, counts, bd, types], [r, counts, bd, types])
        if c == 'reduceScatter':
            return lambda: comm.Reduce_scatter(s, r, recvcounts=counts, op=SUM)
        if c == 'reduceScatterBlock':
            return lambda: comm.Reduce_scatter_block(s, r, op=SUM)
        if c == 'scan':
            return lambda: comm.Scan(s, r, op=SUM)
        if c == 'exscan':
            return lambda: comm.Exscan(s, r, op=SUM)
        raise ValueError(c)

    def poison(self):
        if self.coll == 'barrier':
            return
        if self.coll == 'bcast':
            if rank == 0:
                self.recv[:] = val(0, self.idx)
            else:
                self.recv.fill(np.nan)
            return
        self.recv.fill(np.nan)

    def expected(self):
        """What this rank's receive buffer must hold, or None where MPI leaves it undefined."""
        c, idx, P = self.coll, self.idx, nranks
        if c == 'barrier':
            return None
        if c == 'bcast':
            return val(0, idx)
        if c in ('reduce', 'gather', 'gatherv') and rank != 0:
            return None
        if c in ('reduce', 'allreduce'):
            return sum_val(P, idx)
        if c in ('gather', 'allgather', 'gatherv', 'allgatherv'):
            return np.concatenate([val(r, idx) for r in range(P)])
        if c in ('scatter', 'scatterv'):
            return val(rank, idx)
        if c in ('reduceScatter', 'reduceScatterBlock'):
            return rs_val(rank, P, idx)
        if c == 'scan':
            return scan_val(rank, idx)
        if c == 'exscan':
            # rank 0's receive buffer is undefined in MPI
            return None if rank == 0 else exscan_val(rank, idx)
        if c in ('alltoall', 'alltoallv', 'alltoallw'):
            return np.concatenate([a2a_val(s, rank, P, idx) for s in range(P)])
        raise ValueError(c)

    def check(self, when):
        want = self.expected()
        if want is None:
            return
        bad = np.flatnonzero(self.recv != want)
        if bad.size:
            i = int(bad[0])
            sys.stderr.write('mpi4py: WRONG RESULT%s: %s %d B, rank %d: element %d is %g, expected %g\n'
                             % (when, self.coll, self.count * 8, rank, i, self.recv[i], want[i]))
            sys.stderr.flush()
            comm.Abort(2)


def loop(call, k, is_barrier):
    """k calls; returns (wall time, sum of the timed calls)."""
    if is_barrier:
        w0 = wtime()
        for _ in range(k):
            call()
        t = wtime() - w0
        return t, t
    a = 0.0
    w0 = wtime()
    for _ in range(k):
        t0 = wtime()
        call()
        a += wtime() - t0
        barrier()
    return wtime() - w0, a


_num = np.empty(1)


def bcast_num(x):
    _num[0] = x
    comm.Bcast(_num, root=0)
    return float(_num[0])


def clampl(x, lo, hi):
    if not x >= lo:
        return lo
    if x > hi:
        return hi
    return int(x)


def main():
    ap = argparse.ArgumentParser(prog='bench/mpi4py/osu_coll.py', allow_abbrev=False,
                                 description='The OSU-style sweep of bench/ompi/osu_coll.c over mpi4py.')
    ap.add_argument('--colls', default=','.join(BASE))
    ap.add_argument('--sizes', default=','.join(map(str, SIZES)))
    ap.add_argument('--warm-ms', type=float, default=50)
    ap.add_argument('--first-warm-ms', type=float, default=200)
    ap.add_argument('--target-ms', type=float, default=150)
    ap.add_argument('--max-warm', type=int, default=1000000)
    ap.add_argument('--min-iters', type=int, default=2)
    ap.add_argument('--max-iters', type=int, default=200000)
    ap.add_argument('--label', default='mpi4py')
    o = ap.parse_args()
    colls = [c for c in o.colls.split(',') if c]
    sizes = [int(s) for s in o.sizes.split(',') if s]

    mine = np.empty(1)
    everyone = np.empty(nranks) if rank == 0 else None
    for coll in colls:
        if coll not in BASE and coll not in VCOLLS:
            if rank == 0:
                sys.stderr.write('mpi4py: unknown collective %s\n' % coll)
            comm.Abort(1)
        points = [0] if coll == 'barrier' else sizes
        for si, nbytes in enumerate(points):
            p = Point(coll, nbytes // 8)
            call = p.call()
            is_barrier = coll == 'barrier'
            # 1. correctness
            p.poison()
            barrier()
            call()
            p.check('')
            barrier()
            # 2. probe
            probe = bcast_num(loop(call, 1, is_barrier)[0])
            # 3. warm-up: batches of 1, 2, 4, ... until warm ms have passed on rank 0
            warm_s = (o.first_warm_ms if si == 0 else o.warm_ms) / 1e3
            warm, k, tw = 0, 1, probe
            barrier()
            tw0 = wtime()
            while True:
                tw = loop(call, k, is_barrier)[0] / k
                warm += k
                more = rank == 0 and wtime() - tw0 < warm_s and warm < o.max_warm
                if bcast_num(1.0 if more else 0.0) == 0.0:
                    break
                k = min(2 * k, o.max_warm - warm)
            per = bcast_num(min(probe, tw))
            # 4. timed
            planned = clampl(math.floor(o.target_ms / 1e3 / max(per, 1e-9) + 0.5), o.min_iters, o.max_iters)
            batch = (planned + 7) // 8
            iters, acc, stopped = 0, 0.0, False
            barrier()
            t_start = wtime()
            while iters < planned:
                k = min(batch, planned - iters)
                acc += loop(call, k, is_barrier)[1]
                iters += k
                if iters < planned:
                    over = rank == 0 and wtime() - t_start > 4 * o.target_ms / 1e3 and iters >= o.min_iters
                    if bcast_num(1.0 if over else 0.0) != 0.0:
                        stopped = True
                        break
            # 5. check again
            p.check(' after the timed loop')
            # 6. max over ranks
            mine[0] = acc / iters * 1e6
            comm.Gather(mine, everyone, root=0)
            if rank == 0:
                print('{"impl":"%s","np":%d,"coll":"%s","bytes":%d,"us":%.6g,"min_us":%.6g,"avg_us":%.6g,'
                      '"iters":%d,"warmup":%d%s}'
                      % (o.label, nranks, coll, p.count * 8, everyone.max(), everyone.min(), everyone.sum() / nranks,
                         iters, warm + 1, ',"stopped":true' if stopped else ''), flush=True)


main()
