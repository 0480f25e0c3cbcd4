"""
Point-to-point latency and bandwidth between 2 ranks over mpi4py, the method
of the OSU micro-benchmarks' osu_latency and osu_bw, through mpi4py's buffer
(uppercase) methods on numpy uint8 arrays; one JSON line per point on rank
0's stdout.

It is bench/ompi/osu_p2p.c in Python, written as an mpi4py user would write
the calls (numpy views made once per size and passed straight in; Recv
without a status in the timed loops; a list of Isend/Irecv requests and
MPI.Request.Waitall), so that the difference from the C program is what
mpi4py costs. Same method, flags, data and JSON fields as
bench/ompi/osu_p2p.c and bench/p2p_job.mjs (keep the three in step; the C
file's header describes the method):
  latency: ping-pong (rank 0 Send then Recv, rank 1 Recv then Send, tag 1),
      half round trip in µs on rank 0;
  bw: a window of W Isend (rank 0) / Irecv (rank 1) of one buffer each, tag
      100, Waitall, then a 4-byte ack from rank 1 (tag 101); MB/s on rank 0;
  per size: a check round (receive buffer poisoned with 0xff, every byte and
  each receive's status checked), warm-up (OSU's skip rounds, and until warm
  ms have passed on rank 0), a barrier, then OSU's count of timed rounds.

MPI is initialised by mpi4py's import with its defaults, as every mpi4py
program gets it. Run it with a python3 whose mpi4py is built against the
launcher's MPI library (Debian's python3-mpi4py: Open MPI):
  mpirun.openmpi --allow-run-as-root -n 2 python3 bench/mpi4py/osu_p2p.py \
      [--tests latency,bw] [--lat-sizes 0,1,2,...] [--bw-sizes 1024,...] [--window 64] ...
"""
import argparse
import sys

import numpy as np
from mpi4py import MPI

LAT_TAG, BW_TAG, ACK_TAG = 1, 100, 101

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
nranks = comm.Get_size()
wtime = MPI.Wtime


def pattern(sender, nbytes):
    """What `sender` sends at this size: byte i = (i + 37 sender + bytes) mod 251 (never 0xff)."""
    return ((np.arange(nbytes, dtype=np.int64) + 37 * sender + nbytes) % 251).astype(np.uint8)


def wrong(test, nbytes, what):
    sys.stderr.write('osu_p2p.py: WRONG RESULT: %s %d B, rank %d: %s\n' % (test, nbytes, rank, what))
    sys.stderr.flush()
    comm.Abort(2)


def check(test, nbytes, buf, sender, tag, st):
    want = pattern(sender, nbytes)
    bad = np.flatnonzero(buf != want)
    if bad.size:
        i = int(bad[0])
        wrong(test, nbytes, 'byte %d is %d, expected %d' % (i, buf[i], want[i]))
    got = (st.Get_source(), st.Get_tag(), st.Get_count(MPI.BYTE))
    if got != (sender, tag, nbytes):
        wrong(test, nbytes, 'status source %d tag %d count %d, expected %d %d %d' % (got + (sender, tag, nbytes)))


def latency_rounds(s, r, k, st=None):
    send, recv = comm.Send, comm.Recv
    if rank == 0:
        for _ in range(k):
            send(s, 1, LAT_TAG)
            recv(r, 1, LAT_TAG, st)
    else:
        for _ in range(k):
            recv(r, 0, LAT_TAG, st)
            send(s, 0, LAT_TAG)


def bw_rounds(s, r, k, window, ack, statuses=None):
    waitall = MPI.Request.Waitall
    if rank == 0:
        isend = comm.Isend
        for _ in range(k):
            reqs = [isend(s, 1, BW_TAG) for _ in range(window)]
            waitall(reqs)
            comm.Recv(ack, 1, ACK_TAG)
    else:
        irecv = comm.Irecv
        for _ in range(k):
            reqs = [irecv(r, 0, BW_TAG) for _ in range(window)]
            waitall(reqs, statuses)
            comm.Send(ack, 0, ACK_TAG)


def sizes_arg(v):
    return [int(x) for x in v.split(',') if x.strip()]


def main():
    ap = argparse.ArgumentParser(prog='bench/mpi4py/osu_p2p.py', allow_abbrev=False,
                                 description='osu_latency and osu_bw over mpi4py (bench/ompi/osu_p2p.c in Python).')
    ap.add_argument('--tests', default='latency,bw')
    ap.add_argument('--lat-sizes', type=sizes_arg, default=[0] + [1 << k for k in range(23)])
    ap.add_argument('--bw-sizes', type=sizes_arg, default=[1024 << (2 * k) for k in range(8)])
    ap.add_argument('--window', type=int, default=64)
    ap.add_argument('--large', type=int, default=8192)
    ap.add_argument('--lat-iters', type=int, default=10000)
    ap.add_argument('--lat-iters-large', type=int, default=1000)
    ap.add_argument('--lat-skip', type=int, default=100)
    ap.add_argument('--lat-skip-large', type=int, default=10)
    ap.add_argument('--bw-iters', type=int, default=100)
    ap.add_argument('--bw-iters-large', type=int, default=20)
    ap.add_argument('--bw-skip', type=int, default=10)
    ap.add_argument('--bw-skip-large', type=int, default=2)
    ap.add_argument('--warm-ms', type=float, default=50)
    ap.add_argument('--first-warm-ms', type=float, default=200)
    ap.add_argument('--label', default='mpi4py')
    o = ap.parse_args()
    if nranks != 2 or not 1 <= o.window <= 1024:
        if rank == 0:
            sys.stderr.write('osu_p2p.py: needs exactly 2 ranks (has %d) and a window of 1..1024 (has %d)\n'
                             % (nranks, o.window))
        comm.Abort(1)
    tests = [t for t in o.tests.split(',') if t]
    ack = np.zeros(4, dtype=np.uint8)
    more = np.zeros(1, dtype=np.int32)
    for test in ('latency', 'bw'):
        if test not in tests:
            continue
        is_lat = test == 'latency'
        sizes = o.lat_sizes if is_lat else o.bw_sizes
        biggest = max(sizes + [1])
        sbuf = np.zeros(biggest, dtype=np.uint8)
        rbuf = np.zeros(biggest, dtype=np.uint8)
        for si, nbytes in enumerate(sizes):
            big = nbytes > o.large
            skip = (o.lat_skip_large if big else o.lat_skip) if is_lat else (o.bw_skip_large if big else o.bw_skip)
            iters = (o.lat_iters_large if big else o.lat_iters) if is_lat else (o.bw_iters_large if big else o.bw_iters)
            s, r = sbuf[:nbytes], rbuf[:nbytes]
            if is_lat:
                def rounds(k):
                    latency_rounds(s, r, k)
            else:
                def rounds(k):
                    bw_rounds(s, r, k, o.window, ack)
            # 1. check round
            s[:] = pattern(rank, nbytes)
            r.fill(0xff)
            comm.Barrier()
            tw0 = wtime()
            if is_lat:
                st = MPI.Status()
                latency_rounds(s, r, 1, st)
                check(test, nbytes, r, 1 - rank, LAT_TAG, st)
            else:
                sts = [MPI.Status() for _ in range(o.window)]
                bw_rounds(s, r, 1, o.window, ack, sts)
                if rank == 1:
                    for st in sts:
                        check(test, nbytes, r, 0, BW_TAG, st)
            # 2. warm-up: skip rounds in all, and until warm ms have passed on rank 0
            warm, k, nxt = 1, skip - 1, 1
            warm_s = (o.first_warm_ms if si == 0 else o.warm_ms) / 1e3
            while True:
                if k > 0:
                    rounds(k)
                    warm += k
                more[0] = 1 if rank == 0 and wtime() - tw0 < warm_s else 0
                comm.Bcast(more, 0)
                if not more[0]:
                    break
                k, nxt = nxt, nxt * 2
            # 3. timed
            comm.Barrier()
            t0 = wtime()
            rounds(iters)
            t = wtime() - t0
            if rank == 0:
                if is_lat:
                    print('{"impl":"%s","np":%d,"coll":"latency","bytes":%d,"us":%.6g,"iters":%d,"warmup":%d}'
                          % (o.label, nranks, nbytes, t * 1e6 / (2 * iters), iters, warm), flush=True)
                else:
                    msgs = iters * o.window
                    print('{"impl":"%s","np":%d,"coll":"bw","bytes":%d,"us":%.6g,"mbs":%.6g,"window":%d,"iters":%d,'
                          '"warmup":%d}' % (o.label, nranks, nbytes, t * 1e6 / msgs, nbytes * msgs / t / 1e6, o.window,
                                            iters, warm), flush=True)


main()
