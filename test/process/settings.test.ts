/**
 * A NODEMPI_* setting whose value does not parse is refused with ERR_ARG
 * naming the variable, what it takes and the value given (lib/settings.ts,
 * native/core/tuning.h): by the launcher (and mpi.launch) before any rank
 * starts, and by init in a process started any other way. The job then
 * ends; nothing runs on a default the user did not ask for. An empty value
 * is the same as unset. The mpi backend's refusal under the system MPIs'
 * launchers is in test/mpi/backend.test.ts.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { cli, explain, fixtures, nodempi, root, run, runJob, runSingleton } from '../helpers/job.js';

const NUMBER_US = 'a whole number of microseconds below 4000000';
// Each setting, a value it refuses, and how the refusal words what it takes.
const BAD: [name: string, value: string, takes: string][] = [
  ['NODEMPI_BACKEND', 'tcp', '"shm" or "mpi"'],
  ['NODEMPI_MPI_THREAD_LEVEL', 'multiple', '"funneled" or "single"'],
  ['NODEMPI_HOLD', 'both', '"mark" or "copy"'],
  ['NODEMPI_CMA', 'yes', '"0", "1", "fallback" or "refuse"'],
  ['NODEMPI_CMA_MIN', '64k', 'a whole number of bytes below 2^62'],
  ['NODEMPI_SLOT_KB', '2', 'a whole number of KiB from 4 to 65536'],
  ['NODEMPI_SPIN_US', '-1', NUMBER_US],
  ['NODEMPI_YIELD_US', '4000000', NUMBER_US],
  ['NODEMPI_KERNELS', 'sse', '"auto" or a kernel table (avx512, avx2, neon, scalar)'],
  ['NODEMPI_CHECK_SAME', 'false', '"0" or "1"'],
  ['NODEMPI_HUGE_PAGES', 'off', '"0" or "1"'],
  ['NODEMPI_MPI_PERSISTENT', 'library', '"emulate"'],
];
const refusal = (name: string, value: string, takes: string) => `${name} must be ${takes}, got ${JSON.stringify(value)}`;
const plain = join(fixtures, 'process', 'plain.mjs');
const rankScript = join(fixtures, 'process', 'rank.mjs');

describe('a NODEMPI_* value that does not parse', () => {
  it.each(BAD)('%s=%s: the launcher refuses it and starts no rank', async (name, value, takes) => {
    const r = await nodempi(['-n', '2', plain], { env: { [name]: value } });
    expect(r.status, explain(r)).toBe(1);
    expect(r.stderr, explain(r)).toContain(`nodempi: launch: ${refusal(name, value, takes)}\n`);
    expect(r.stdout, explain(r)).toBe('');
  });

  it.each(BAD)('%s=%s: init in a plain node process throws ERR_ARG', async (name, value, takes) => {
    const r = await runSingleton(rankScript, [], { env: { [name]: value } });
    expect(r.status, explain(r)).toBe(1);
    // The error names the call that initialised MPI: here the fixture's barrier.
    expect(r.stderr, explain(r)).toContain(`MPIError: barrier: ${refusal(name, value, takes)}`);
    expect(r.stderr, explain(r)).toContain("code: 'ERR_ARG'");
    expect(r.stdout, explain(r)).not.toContain('start rank');
  });

  it('NODEMPI_ALGO names each entry it cannot use', async () => {
    const r = await nodempi(['-n', '2', plain], { env: { NODEMPI_ALGO: 'allreduce:ring,bogus:flat,reduceScatter:flat,reduce:sliced' } });
    expect(r.status, explain(r)).toBe(1);
    expect(r.stderr, explain(r)).toContain("nodempi: launch: NODEMPI_ALGO: 'allreduce:ring' names no algorithm of allreduce " +
      "(flat, sliced or auto); 'bogus:flat' names no collective; 'reduceScatter:flat' names a collective with one algorithm");
  });

  it('several at once are named together, in one error', async () => {
    const r = await runSingleton(rankScript, [], { env: { NODEMPI_BACKEND: 'w', NODEMPI_HOLD: 'x', NODEMPI_SPIN_US: 'y', NODEMPI_CHECK_SAME: 'z' } });
    expect(r.status, explain(r)).toBe(1);
    expect(r.stderr, explain(r)).toContain(`MPIError: barrier: ${refusal('NODEMPI_BACKEND', 'w', '"shm" or "mpi"')}; ` +
      `${refusal('NODEMPI_HOLD', 'x', '"mark" or "copy"')}; ` +
      `${refusal('NODEMPI_SPIN_US', 'y', NUMBER_US)}; ${refusal('NODEMPI_CHECK_SAME', 'z', '"0" or "1"')}`);
  });

  it('mpi.launch rejects with ERR_ARG for a value in its env option', async () => {
    const code = `import * as mpi from ${JSON.stringify(join(root, 'dist', 'index.js'))};
      try { await mpi.launch({ np: 2, script: ${JSON.stringify(plain)}, env: { NODEMPI_SLOT_KB: '1k' } }); console.log('launched'); }
      catch (e) { console.log(e.code, e.message); }`;
    const r = await run(process.execPath, ['--input-type=module', '-e', code]);
    expect(r.status, explain(r)).toBe(0);
    expect(r.stdout.trim()).toBe(`ERR_ARG launch: ${refusal('NODEMPI_SLOT_KB', '1k', 'a whole number of KiB from 4 to 65536')}`);
  });

  // A rank whose environment changed after the launcher looked (a wrapper
  // script): it alone refuses, and the job ends on its failure, no hang.
  it.each([2, 3, 4])('only rank 1 of %i refuses at init: the job ends with its error', async (np) => {
    const only1 = `if [ "$NODEMPI_RANK" = 1 ]; then export NODEMPI_YIELD_US=soon; fi; exec "${process.execPath}" "${rankScript}"`;
    const r = await run(process.execPath, [cli, '-n', String(np), '--oversubscribe', '--timeout', '60', '--', 'sh', '-c', only1], { limitMs: 120_000 });
    expect(r.hung, explain(r)).toBe(false);
    expect(r.status, explain(r)).toBe(1);
    expect(r.stderr, explain(r)).toContain(`MPIError: barrier: ${refusal('NODEMPI_YIELD_US', 'soon', NUMBER_US)}`);
    expect(r.stdout, explain(r)).not.toContain('start rank');
  });

  it('empty values are unset: a job at np 3 runs on the defaults', async () => {
    const env = Object.fromEntries([...BAD.map(([name]) => [name, '']), ['NODEMPI_ALGO', '']]);
    const r = await runJob(3, rankScript, [], { env, launcherArgs: ['--oversubscribe'] });
    expect(r.status, explain(r)).toBe(0);
    expect(r.stdout.split('\n').filter((l) => l.startsWith('start rank')).length, explain(r)).toBe(3);
  });
});
