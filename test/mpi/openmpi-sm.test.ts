/**
 * The mpi backend over Open MPI as it runs on one machine by default: ob1
 * over its shared memory (the vader btl, single copies by CMA), which the
 * suites (suite.ts, TCP as between machines) never reach and which a
 * user's `mpirun -n 4 node app.js`, or the ranks of one host under srun,
 * use. A share of the fixtures, every one at 2 and 4 ranks (at 4, on CI's
 * 2 cores, the ranks share cores as they wait in the library's polling);
 * the large ones move single copies between the processes' heaps.
 */
import { runEntries } from './suite.js';

runEntries([
  { script: 'vector-coll/large.mjs', name: 'vcoll large' },
  { script: 'nonblocking/kinds.mjs', args: ['0,7,1500'], name: 'nonblocking kinds' },
  { script: 'nonblocking/persistent.mjs', args: ['50'], name: 'persistent' },
  { script: 'comm/intercomm.mjs', args: ['block', 'coll'], name: 'intercomm block coll' },
  { script: 'p2p/messages.mjs', name: 'p2p all' },
  { script: 'p2p/messages.mjs', args: ['large'], name: 'p2p large' },
], 'openmpi-sm', () => [2, 4]);
