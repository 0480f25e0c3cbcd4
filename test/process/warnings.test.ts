/**
 * The warnings a job can print (Node's process.emitWarning: `--no-warnings`
 * or NODE_NO_WARNINGS=1 silences them), each once per process: more ranks
 * than cores (the launcher; `--oversubscribe` says it is intended),
 * nonblocking requests never awaited (each rank, at the end), an MPI
 * launcher's environment while NODEMPI_BACKEND=shm, NODEMPI_HOLD=mark where
 * the runtime's transfer() moves a marked buffer (Node 22, which
 * test/packaging/node-lines.test.ts runs this file on); and a missing program
 * is one message, not a trace per rank, as a failing rank's trace is the
 * only one when the others stop because of it.
 */
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';

import { explain, nodempi, root, start } from '../helpers/job.js';
import { transferHonoursMark } from '../../dist/hold.js';

const fixture = (name: string) => join(root, 'test/fixtures/process', name);
const count = (text: string, code: string) => text.split('\n').filter((l) => l.includes(`[${code}] Warning:`)).length;

describe('warnings', () => {
  const over = Math.min(availableParallelism() + 1, 256);

  test(`${over} ranks on ${availableParallelism()} cores: one NODEMPI_OVERSUBSCRIBED warning; none with --oversubscribe or at 1 rank`, async () => {
    const r = await nodempi(['-n', String(over), '--', 'true']);
    expect(r.status, explain(r)).toBe(0);
    expect(count(r.stderr, 'NODEMPI_OVERSUBSCRIBED'), explain(r)).toBe(1);
    expect(r.stderr).toContain(`${over} ranks on ${availableParallelism()} cores`);
    for (const args of [['--oversubscribe', '-n', String(over)], ['-n', '1']]) {
      const q = await nodempi([...args, '--', 'true']);
      expect(q.status, explain(q)).toBe(0);
      expect(q.stderr, explain(q)).not.toContain('NODEMPI_OVERSUBSCRIBED');
    }
  });

  test('requests never awaited: each rank warns once at the end, naming the calls', async () => {
    const r = await nodempi(['-n', '2', fixture('unawaited.mjs'), 'forget']);
    expect(r.status, explain(r)).toBe(0);
    expect(count(r.stderr, 'NODEMPI_UNAWAITED'), explain(r)).toBe(2);
    expect(r.stderr).toMatch(/never awaited, waited for or tested: (iallreduce x2, ibarrier|ibarrier, iallreduce x2)\./);
    expect(r.stderr).not.toMatch(/ibcast/);
  });

  test('requests all awaited, waited for or tested: no warning; --no-warnings silences it', async () => {
    const r = await nodempi(['-n', '2', fixture('unawaited.mjs'), 'await']);
    expect(r.status, explain(r)).toBe(0);
    expect(r.stdout).toContain('unawaited await: rank 1 done');
    expect(r.stderr, explain(r)).not.toContain('Warning');
    const q = await nodempi(['-n', '2', '--', process.execPath, '--no-warnings', fixture('unawaited.mjs'), 'forget']);
    expect(q.status, explain(q)).toBe(0);
    expect(q.stderr, explain(q)).not.toContain('NODEMPI_UNAWAITED');
  });

  const honoured = transferHonoursMark();
  test(`NODEMPI_HOLD=mark: each rank warns where transfer() moves a marked buffer (${process.version}: ${honoured ? 'no' : 'it does'})`, async () => {
    const r = await nodempi(['-n', '2', fixture('unawaited.mjs'), 'await'], { env: { NODEMPI_HOLD: 'mark' } });
    expect(r.status, explain(r)).toBe(0);
    expect(r.stdout).toContain('unawaited await: rank 1 done');
    expect(count(r.stderr, 'NODEMPI_HOLD_UNSAFE'), explain(r)).toBe(honoured ? 0 : 2);
    if (!honoured) expect(r.stderr).toContain(`moves a marked buffer on Node ${process.version}`);
  });

  test('a program that does not exist: one line, status 1, no rank started', async () => {
    const r = await nodempi(['-n', '4', 'no-such-program.js']);
    expect(r.status, explain(r)).toBe(1);
    expect(r.stderr.trim()).toBe('nodempi: cannot find the program no-such-program.js (no such file)');
    expect(r.stdout).toBe('');
  });

  test("mpirun with NODEMPI_BACKEND=shm: each process warns that it is a world of one", async () => {
    const r = await start('mpirun.openmpi', ['--allow-run-as-root', '--oversubscribe', '-n', '2', process.execPath, fixture('unawaited.mjs'), 'await'],
      { env: { NODEMPI_BACKEND: 'shm' } }).done;
    expect(r.stdout.match(/unawaited await: rank 0 done/g), explain(r)).toHaveLength(2);
    expect(count(r.stderr, 'NODEMPI_LAUNCHER_IGNORED'), explain(r)).toBe(2);
    expect(r.stderr).toContain('mpirun (Open MPI) set OMPI_COMM_WORLD_SIZE, but NODEMPI_BACKEND=shm makes this process a world of one');
  });

  test('one rank throws: its trace, the launcher\'s line, and one line for each rank it stopped', async () => {
    const r = await nodempi(['-n', '4', '--oversubscribe', fixture('root-cause.mjs')]);
    expect(r.status, explain(r)).toBe(1);
    expect(r.stderr.match(/Error: rank 1 fails on purpose/g), explain(r)).toHaveLength(1);
    expect(r.stderr).toContain('nodempi: rank 1 exited with code 1; ending the job');
    for (const k of [0, 2, 3]) {
      const call = k % 2 === 0 ? 'allreduce' : 'iallreduce';
      // Which of the two causes a rank reports depends on whether it saw rank 1
      // exit itself or heard of the failure from the launcher first.
      const cause = `(the job has failed \\(rank 1 ended or aborted\\)|rank 1 has exited while rank ${k} waits for it)`;
      expect(r.stderr, explain(r)).toMatch(new RegExp(`nodempi: rank ${k} stopped: ${call}: ${cause} \\(uncaught ERR_PROC_FAILED\\)\n`));
    }
    expect(r.stderr, explain(r)).not.toMatch(/MPIError|at .*dist\//);
  });
});
