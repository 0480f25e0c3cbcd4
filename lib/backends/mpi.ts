/**
 * The system MPI backend: the MPI library of the machine (Open MPI, MPICH,
 * or one of MPICH's ABI), opened at run time by the addon
 * (native/core/mpi), for processes an MPI launcher started (mpirun,
 * mpiexec, srun), so that a job spans machines.
 *
 * Communicators, groups and intercommunicators are the library's; their
 * members' COMM_WORLD ranks come from MPI_Group_translate_ranks.
 * Everything runs on one thread (MPI_THREAD_FUNNELED, or SINGLE with
 * NODEMPI_MPI_THREAD_LEVEL=single): nonblocking requests progress while
 * JavaScript waits in the event loop, which polls the library
 * (MPI_Testsome) between other work for as long as requests are active,
 * and inside test()/wait().
 */
import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

import type { Backend, MadeInter } from '../backend.js';
import { templateRunner } from '../block.js';
import { CHECK, forgetChecks, mpi as collectives, shareCallBlock } from '../coll/mpi.js';
import { setTagUb } from '../constants.js';
import { MPIError } from '../errors.js';
import { native } from '../native.js';
import { mpi as p2p, tagUb } from '../p2p/mpi.js';
import { chooseBackend, launcherMismatch, libraryCandidates, threadLevel, worldSizeAdvice } from './choose.js';

const INT32 = 2 ** 31;

function int32(call: string, what: string, v: number): number {
  if (v < -INT32 || v >= INT32) throw new MPIError('ERR_ARG', `${call}: ${what} ${v} does not fit MPI's int on the mpi backend`);
  return v;
}

function world(handle: number, remote = false): number[] {
  return Array.from(native.mpiWorldRanks(handle, remote));
}

function inter(handle: number): MadeInter {
  return { handle, local: world(handle), remote: world(handle, true), low: false };
}

/** The library this process opened, once init() has run. */
export let opened: { path: string; abi: string } | null = null;

function open(env: NodeJS.ProcessEnv): { path: string; abi: string } {
  const choice = chooseBackend(env);
  const got = native.mpiOpen(libraryCandidates(env, choice.launcher));
  if ('tried' in got) {
    throw new MPIError('ERR_OTHER', [
      `init: the mpi backend (${choice.reason}) found no MPI library it can load. Tried:`,
      ...got.tried.map((t) => `  ${t}`),
      'Install an MPI on every machine of the job (Debian/Ubuntu: apt-get install openmpi-bin, or mpich),',
      'or set NODEMPI_MPI_LIB=/path/to/libmpi.so to the library your launcher belongs to.',
      'To run on this machine alone without MPI, start the job with `nodempi -n N` (or NODEMPI_BACKEND=shm).',
    ].join('\n'));
  }
  if (choice.launcher === 'slurm' && got.abi === 'Open MPI') {
    const dir = openMpiWithoutPmi();
    if (dir) {
      throw new MPIError('ERR_OTHER',
        `init: srun started this process without PMIx (${choice.reason}), but Open MPI (${got.path}) joins a Slurm job ` +
        `through PMIx only, as built here (no PMI-1/PMI-2 component in ${dir}): start Open MPI jobs with srun --mpi=pmix, ` +
        'or with mpirun inside salloc or sbatch; srun --mpi=pmi2 is for MPICH.');
    }
  }
  const mismatch = launcherMismatch(choice.launcher, got.abi);
  if (mismatch) {
    throw new MPIError('ERR_OTHER',
      `init: ${mismatch}, but the MPI library found is ${got.abi} (${got.path}); each launcher starts its own library's jobs only. ` +
      'Start the program with the launcher of that library, or set NODEMPI_MPI_LIB to the library of this launcher.');
  }
  return got;
}

/**
 * The component directory of the Open MPI just opened, when it shows that
 * this build cannot join a Slurm job through PMI-1 or PMI-2 (it has PMIx
 * components but neither mca_pmix_s1 nor mca_pmix_s2, as Debian's and every
 * Open MPI 5); else null (not found, or it can). Without this check such a
 * build aborts in MPI_Init, and srun --kill-on-bad-exit often cuts its
 * message short.
 */
function openMpiWithoutPmi(): string | null {
  let maps: string;
  try {
    maps = readFileSync('/proc/self/maps', 'utf8');
  } catch {
    return null;
  }
  const lib = maps.split('\n').map((l) => l.slice(l.indexOf('/'))).find((p) => p.startsWith('/') && basename(p).startsWith('libmpi.so'));
  if (!lib) return null;
  for (const dir of [join(dirname(lib), 'openmpi'), join(dirname(lib), 'openmpi', 'lib', 'openmpi3')]) {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      continue;
    }
    if (!names.some((n) => n.startsWith('mca_pmix_'))) continue;
    return names.includes('mca_pmix_s1.so') || names.includes('mca_pmix_s2.so') ? null : dir;
  }
  return null;
}

// Progress while requests are active: the library completes requests
// only when called, so the event loop polls it, between timers and I/O,
// until none is active: at every turn of the loop for SPIN_MS after the
// last start or completion (most collectives complete within it), then
// once a millisecond, so that a long wait costs little CPU
// (bench/BACKENDS.md).
const SPIN_MS = 2;
let polling = false;
let slow: NodeJS.Timeout | null = null;
let lastActivity = 0;
let deliverTo: ((done: unknown[]) => void) | null = null;
function poll(): void {
  slow = null;
  const done = native.mpiPoll();
  if (done.length > 0) {
    lastActivity = performance.now();
    deliverTo!(done);
  }
  if (native.mpiActive() === 0) {
    polling = false;
  } else if (performance.now() - lastActivity < SPIN_MS) {
    setImmediate(poll);
  } else {
    slow = setTimeout(poll, 1);
  }
}

const backend: Backend = {
  name: 'mpi',

  runtime: {
    init() {
      const env = process.env;
      const level = threadLevel(env);
      opened = open(env);
      const [rank, size] = native.mpiInit(level);
      const expected = chooseBackend(env).expectedSize;
      if (expected !== null && size !== expected) {
        const { reason, launcher } = chooseBackend(env);
        throw new MPIError('ERR_OTHER',
          `init: the launcher started ${expected} processes (${reason}), but ${opened.abi} (${opened.path}) ` +
          `sees a world of ${size}: ${worldSizeAdvice(env, launcher, opened.abi)}`);
      }
      shareCallBlock();
      setTagUb(tagUb());
      return { rank, size };
    },
    finalize: () => native.mpiFinalize(),
    // A rank that ends with an error must not wait in MPI_Finalize for
    // ranks that may be waiting for it: it leaves without, and the launcher,
    // seeing a rank end unfinalized, ends the job (MPI_Abort here would
    // also end it, but Open MPI's mpirun may drop the rank's last output,
    // its error message among it).
    exit: (code) => (code === 0 ? native.mpiFinalize() : undefined),
    abort: (code) => native.mpiAbort(code),
    libraryVersion: () => native.mpiLibraryVersion(),
    processorName: () => native.mpiProcessorName(),
  },

  comms: {
    info(handle) {
      const [rank, size] = native.mpiCommInfo(handle);
      return { rank, size };
    },
    dup(c) {
      const h = native.mpiCommDup(c.handle);
      return { handle: h, world: world(h) };
    },
    split(c, _world, call, color, key) {
      const h = native.mpiCommSplit(c.handle, int32(call, 'color', color), int32(call, 'key', key));
      return h < 0 ? null : { handle: h, world: world(h) };
    },
    splitShared(c, _world, undefined, key) {
      const h = native.mpiCommSplitShared(c.handle, undefined, int32('splitType', 'key', key));
      return h < 0 ? null : { handle: h, world: world(h) };
    },
    free(handle) {
      forgetChecks(handle);
      native.mpiCommFree(handle);
    },
    createInter(q) {
      const peer = q.peer;
      return inter(native.mpiIntercommCreate(q.local.handle, q.localLeader, peer ? peer.comm.handle : -1,
        peer ? peer.remoteLeader : 0, int32('createIntercomm', 'tag', q.tag)));
    },
    merge(c, _local, _remote, _low, high) {
      const h = native.mpiIntercommMerge(c.handle, high);
      return { handle: h, world: world(h) };
    },
    dupInter: (c) => inter(native.mpiCommDup(c.handle)),
  },

  requests: {
    test: (id) => native.mpiTest(id),
    wait: (id) => native.mpiWait(id),
    waitAny: (ids) => native.mpiWaitAny(ids),
    start(template) {
      native.mpiStart(template);
      return template;
    },
    freeTemplate: (template) => native.mpiFreeTemplate(template),
    // Repeated blocking calls skip their argument checks (lib/replay.ts)
    // unless every call must first agree with the other ranks' (CHECK).
    runTemplate: CHECK ? undefined : templateRunner(native.mpiRunTemplate),
    watch(deliver) {
      deliverTo = deliver;
      lastActivity = performance.now();
      if (slow) {
        clearTimeout(slow);
        slow = null;
        setImmediate(poll);
      } else if (!polling) {
        polling = true;
        setImmediate(poll);
      }
    },
    drain: () => native.mpiPoll(),
  },

  collectives,
  p2p,
};

export { backend as mpi };
