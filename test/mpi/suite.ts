/**
 * The multi-rank suites on the mpi backend: the same rank scripts as the
 * shm suites (test/fixtures), started by a system MPI's launcher with TCP
 * between the ranks (test/helpers/job.ts mpiCommand), at world sizes 1 to 4 (sizesOf).
 * The scripts check their results exactly; where the mpi backend differs
 * from shm by design (README "Across machines"), they say so themselves
 * (test/fixtures/check.mjs onMpi).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'vitest';

import { alternate, expectPassed, runJob, type Launcher, type SystemMpi } from '../helpers/job.js';

export interface Entry {
  /** Rank script under test/fixtures. */
  script: string;
  args?: string[];
  /** The summary line's name (done(name) in the script). */
  name: string;
  env?: Record<string, string>;
  /** World sizes (default: sizesOf). */
  sizes?: number[];
  timeoutSec?: number;
  /** A fresh directory as the last argument (barrier's marker files). */
  dir?: boolean;
}

const entries: Entry[] = [
  // Collectives: every datatype and op, every root, IN_PLACE, exact values.
  ...['bcast', 'gather', 'scatter', 'allgather', 'alltoall', 'reduce', 'allreduce'].map((c) => ({ script: `coll/${c}.mjs`, name: c })),
  // FLOAT16 and BFLOAT16 (stand-in types, nodempi's kernels as MPI ops) in the other reduction collectives.
  { script: 'coll/half.mjs', name: 'half' },
  { script: 'coll/barrier.mjs', name: 'barrier', dir: true },
  // Repeated blocking calls run from a template (lib/replay.ts), and calls after finalize.
  { script: 'coll/replay.mjs', name: 'replay' },
  { script: 'coll/no-alloc.mjs', name: 'no-alloc' },
  // Plain JavaScript values (lib/objects), the 256 MiB one at np 2.
  { script: 'objects/collectives.mjs', name: 'objects all' },
  { script: 'objects/collectives.mjs', args: ['large'], name: 'objects large', sizes: [2], timeoutSec: 120 },
  // Point-to-point (lib/p2p), the 8 MiB messages apart.
  { script: 'p2p/messages.mjs', name: 'p2p all' },
  { script: 'p2p/messages.mjs', args: ['large'], name: 'p2p large', timeoutSec: 120 },
  // Buffers from mpi.allocMem.
  { script: 'buffers/alloc-mem.mjs', name: 'alloc-mem' },
  ...['root', 'buffer', 'count', 'op', 'type', 'arg'].map((g) => ({ script: 'coll/errors.mjs', args: [g], name: `errors ${g}` })),
  { script: 'vector-coll/v-variants.mjs', args: ['1'], name: 'vcoll' },
  { script: 'vector-coll/large.mjs', name: 'vcoll large' },
  // Derived datatypes: MPI datatypes for data movement, kernel layout for reductions.
  ...['fixed', 'v', 'inplace'].map((g) => ({ script: 'derived-datatype-coll/move.mjs', args: [g, '1'], name: `dtcoll move ${g} x1 main` })),
  ...['predefined', 'userop-contig', 'userop-struct', 'userop-holes'].map((g) => ({
    script: 'derived-datatype-coll/reduce.mjs', args: [g, '1'], name: `dtcoll reduce ${g} x1`,
  })),
  { script: 'derived-datatype-coll/large.mjs', name: 'dtcoll large', timeoutSec: 90 },
  { script: 'derived-datatype-coll/errors.mjs', name: 'dtcoll errors', env: { NODEMPI_CHECK_SAME: '1' } },
  // User-defined ops through MPI_Op_create, and the datatype layer.
  { script: 'ops/userop.mjs', name: 'userop' },
  { script: 'datatype/pack.mjs', name: 'datatype/pack' },
  // Nonblocking and persistent requests, progressed from the event loop.
  { script: 'nonblocking/kinds.mjs', args: ['0,7,1500'], name: 'nonblocking kinds' },
  { script: 'nonblocking/requests.mjs', name: 'request lists' },
  { script: 'nonblocking/persistent.mjs', args: ['200'], name: 'persistent' },
  { script: 'nonblocking/persistent.mjs', args: ['50'], name: 'persistent', env: { NODEMPI_MPI_PERSISTENT: 'emulate' } },
  // A round that fails, then another start: the library's own request
  // refuses it with a message, the emulated one runs it.
  { script: 'mpi/persistent-failed.mjs', name: 'persistent failed', sizes: [2, 3] },
  { script: 'mpi/persistent-failed.mjs', name: 'persistent failed', env: { NODEMPI_MPI_PERSISTENT: 'emulate' }, sizes: [2, 3] },
  { script: 'nonblocking/userop.mjs', name: 'nonblocking user ops' },
  { script: 'nonblocking/many.mjs', args: ['320'], name: 'many outstanding' },
  { script: 'nonblocking/ordering.mjs', name: 'ordering' },
  { script: 'nonblocking/eventloop.mjs', name: 'event loop' },
  // Communicators, groups, intercommunicators.
  ...['main', 'traffic'].map((p) => ({ script: 'comm/split.mjs', args: [p], name: `split ${p}` })),
  ...['main', 'freed'].map((p) => ({ script: 'comm/dupcreate.mjs', args: [p], name: `dupcreate ${p}` })),
  { script: 'comm/group.mjs', name: 'group' },
  ...['coll', 'userop'].flatMap((part) => [
    { script: 'comm/intercomm.mjs', args: ['block', part], name: `intercomm block ${part}`, sizes: [2, 3, 4] },
    { script: 'comm/intercomm.mjs', args: ['interleaved', part], name: `intercomm interleaved ${part}`, sizes: [3, 4] },
  ]),
  // Empty messages, where Open MPI 4.1's nonblocking intercommunicator
  // reduce lost step (lib/coll/mpi.ts, SINK).
  { script: 'comm/intercomm.mjs', args: ['block', 'coll'], name: 'intercomm block coll', env: { IC_SCALE: '0' }, sizes: [2, 3, 4] },
  // MPI_THREAD_SINGLE (NODEMPI_MPI_THREAD_LEVEL=single): blocking,
  // nonblocking and point-to-point, at 2 and 3 ranks (what the thread level
  // changes does not depend on the world's size).
  ...[
    { script: 'coll/allreduce.mjs', name: 'allreduce' },
    { script: 'nonblocking/kinds.mjs', args: ['0,7,1500'], name: 'nonblocking kinds' },
    { script: 'p2p/messages.mjs', name: 'p2p all' },
  ].map((e) => ({ ...e, env: { NODEMPI_MPI_THREAD_LEVEL: 'single' }, sizes: [2, 3] })),
  // Finalize while a peer has not received yet, where MPICH over TCP hung
  // (native/core/mpi/mpi.cc, finalize): at every size under both MPIs.
  ...['gather', 'bcast'].map((w) => ({ script: 'process/late-finalize.mjs', args: [w], name: `late-finalize ${w}`, sizes: [1, 2, 3, 4] })),
  // Transparent huge pages for large buffers (native/core/memory/huge_pages.h), and without.
  { script: 'mpi/huge-pages.mjs', args: ['on'], name: 'huge pages on' },
  { script: 'mpi/huge-pages.mjs', args: ['off'], name: 'huge pages off', env: { NODEMPI_HUGE_PAGES: '0' } },
  // Mismatch detection, opt-in here.
  { script: 'mismatch/mismatch.mjs', name: 'mismatch', env: { NODEMPI_CHECK_SAME: '1' }, sizes: [2, 3, 4] },
  // v-collectives whose receive blocks disagree with their messages: every
  // rank throws instead of waiting for a rank the library failed.
  ...['2', '3000'].map((k) => ({ script: 'mismatch/vsizes.mjs', args: [k], name: 'v sizes', env: { NODEMPI_CHECK_SAME: '1' }, sizes: [2, 3, 4] })),
  // And every v-collective that is right passes the check.
  { script: 'vector-coll/v-variants.mjs', args: ['1'], name: 'vcoll', env: { NODEMPI_CHECK_SAME: '1' } },
  // No block at displacement 0, one rank's included: MPICH 4.0's allgatherv
  // and Open MPI 4.1's alltoallw on one rank get them wrong (lib/coll/mpi.ts).
  { script: 'vector-coll/displacements.mjs', name: 'vcoll displacements' },
];

/**
 * The world sizes of entry `i` under `mpi`: 1, 2, and one of 3 and 4, the
 * other one under the other MPI (entries alternate). So every entry runs at
 * every size from 1 to 4 on the mpi backend, each MPI at 3 and at 4 ranks
 * across the entries, and the two suites start half the oversubscribed jobs
 * that both sizes under both MPIs would: with 3 and 4 ranks on CI's 2 cores
 * those were three quarters of the suites' time (the np-specific logic is
 * the library's, not nodempi's, on this backend; the shm suites run every
 * size).
 */
export function sizesOf(i: number, mpi: SystemMpi): number[] {
  return [1, 2, alternate(i + (mpi === 'openmpi' ? 0 : 1), 3, 4)];
}

/** Every entry under `mpi`'s launcher. */
export function mpiSuite(mpi: SystemMpi): void {
  runEntries(entries, mpi, (i, e) => e.sizes ?? sizesOf(i, mpi));
}

/** Entries `list` under `launcher`, entry i at the world sizes `sizes(i, entry)`. */
export function runEntries(list: Entry[], launcher: Exclude<Launcher, 'nodempi'>, sizes: (i: number, e: Entry) => number[]): void {
  for (const [i, e] of list.entries()) {
    describe(`${e.script} ${(e.args ?? []).join(' ')}${e.env ? ` ${Object.entries(e.env).map(([k, v]) => `${k}=${v}`).join(' ')}` : ''}`, () => {
      for (const np of sizes(i, e)) {
        it(`under ${launcher} at np=${np}`, async () => {
          const dir = e.dir ? mkdtempSync(join(tmpdir(), 'nodempi-mpi-')) : null;
          try {
            const args = [...(e.args ?? []), ...(dir ? [dir] : [])];
            const r = await runJob(np, e.script, args, { launcher, env: e.env, timeoutSec: e.timeoutSec ?? 120 });
            expectPassed(r, { name: e.name, np });
          } finally {
            if (dir) rmSync(dir, { recursive: true, force: true });
          }
        });
      }
    });
  }
}
