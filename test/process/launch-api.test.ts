/**
 * mpi.launch(), the programmatic form, in process and thread mode. Each
 * launch runs in a driver process (test/fixtures/process/driver.mjs), never
 * inside the test process, and prints its LaunchResult.
 */
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { type JobResult, explain, root, start } from '../helpers/job.js';
import { ENDS_WITHIN_MS, leakedSegments, processFixtures, rankLines, rankPids, reap, scratch, shmNames, survivors } from './util.js';

interface Result {
  exitCodes: number[];
  signals: (string | null)[];
  failedRank: number;
  timedOut: boolean;
  status: number;
  fdsBefore: number;
  fdsAfter: number;
}

async function drive(opts: Record<string, unknown>, env?: Record<string, string>): Promise<{ run: JobResult; result: Result }> {
  const run = await start(process.execPath, [join(processFixtures, 'driver.mjs'), JSON.stringify(opts)], { env }).done;
  const m = /^RESULT (.*)$/m.exec(run.stdout);
  if (!m) throw new Error(`the driver printed no result\n${explain(run)}`);
  return { run, result: JSON.parse(m[1]!) as Result };
}

describe.each(['process', 'thread'] as const)('launch() in %s mode', (mode) => {
  test.each([1, 2, 3, 4])('np %i: collectives give the right values, every exit code is 0', async (np) => {
    const before = shmNames();
    const { run, result } = await drive({ np, script: 'coll.mjs', mode, tagOutput: true });
    expect(result.exitCodes, explain(run)).toEqual(new Array(np).fill(0));
    expect(result.status).toBe(0);
    expect(result.failedRank).toBe(-1);
    expect(result.timedOut).toBe(false);
    const sum = np + (np * (np - 1)) / 2; // element 1: sum over ranks of 1 + rank
    for (let k = 0; k < np; k++) expect(run.stdout).toContain(`[${k}] coll ok rank ${k} size ${np} sum ${sum} max ${np - 1}\n`);
    expect(await leakedSegments(before)).toEqual([]);
  });

  test('a failing rank is reported: its code, the failed rank and the status', async () => {
    const np = 3;
    const { run, result } = await drive({ np, script: 'coll.mjs', mode, env: { COLL_EXIT_RANK: '2', COLL_EXIT_CODE: '7' } });
    expect(result.failedRank, explain(run)).toBe(2);
    expect(result.exitCodes[2]).toBe(7);
    expect(result.status).toBe(7);
    expect(rankLines(run.stderr)).toEqual(['nodempi: rank 2 exited with code 7; ending the job']);
  });

  test('a rank that throws while the others wait: reported, the others stop with ERR_PROC_FAILED', async () => {
    const np = 4;
    const { run, result } = await drive({
      np, scriptUrl: './rank.mjs', mode, args: ['--fail', '1', '--how', 'throw', '--others', 'allreduce'],
    });
    expect(result.failedRank, explain(run)).toBe(1);
    expect(result.status).toBe(1);
    expect(result.exitCodes).toEqual([0, 1, 0, 0]);
    expect(run.stdout.match(/^caught ERR_PROC_FAILED /gm), explain(run)).toHaveLength(3);
    expect(run.stderr).toContain('rank 1 fails on purpose');
    expect(rankLines(run.stderr)).toHaveLength(1);
  });

  test('abort(5) in one rank: status 5, the others ended promptly', async () => {
    const { run, result } = await drive({
      np: 3, script: 'rank.mjs', mode, args: ['--fail', '2', '--how', 'abort:5', '--others', 'sleep'],
    });
    expect(result.status, explain(run)).toBe(5);
    expect(result.failedRank).toBe(2);
    expect(result.exitCodes[2]).toBe(5);
    expect(rankLines(run.stderr)).toEqual(['nodempi: rank 2 called abort and exited with code 5; ending the job']);
    expect(run.ms).toBeLessThan(ENDS_WITHIN_MS);
  });

  test('abort(0) still ends the others (MPI passes the code 0 on as the status)', async () => {
    const { run, result } = await drive({
      np: 3, script: 'rank.mjs', mode, args: ['--fail', '1', '--how', 'abort:0', '--others', 'sleep'],
    });
    expect(result.failedRank, explain(run)).toBe(1);
    expect(result.exitCodes[1]).toBe(0);
    expect(result.status).toBe(0);
    expect(run.ms).toBeLessThan(ENDS_WITHIN_MS);
    expect(rankLines(run.stderr)).toEqual(['nodempi: rank 1 called abort and exited with code 0; ending the job']);
  });

  test('timeout: status 124, timedOut', async () => {
    const { run, result } = await drive({
      np: 2, script: 'rank.mjs', mode, timeout: 0.5, args: ['--fail', '0', '--how', 'hang', '--others', 'barrier'],
    });
    expect(result.timedOut, explain(run)).toBe(true);
    expect(result.status).toBe(124);
    expect(run.ms).toBeLessThan(ENDS_WITHIN_MS);
  });

  test.each(['coll.mjs', 'plain.mjs'])('ten jobs of %s in a row leak no descriptor', async (script) => {
    const { run, result } = await drive({ np: 2, script, mode, repeat: 10 });
    expect(result.status, explain(run)).toBe(0);
    expect(result.fdsAfter).toBe(result.fdsBefore);
  });
});

describe('launch() arguments', () => {
  test('bad options reject with MPIError ERR_ARG', async () => {
    const r = await start(process.execPath, ['--input-type=module', '-e', `
      import * as mpi from ${JSON.stringify(join(root, 'dist', 'index.js'))};
      for (const o of [{ np: 0, script: 'x' }, { np: 2 }, { np: 2, script: 'x', mode: 'fiber' },
                       { np: 2, command: ['true'], mode: 'thread' }, { np: 2, script: 'x', timeout: -1 }, null]) {
        try { await mpi.launch(o); console.log('resolved'); }
        catch (e) { console.log(e instanceof mpi.MPIError ? e.code : 'other ' + e); }
      }`]).done;
    expect(r.stdout.trim().split('\n'), explain(r)).toEqual(new Array(6).fill('ERR_ARG'));
  });

  test('the host process dying ends process-mode ranks (watchdog)', async () => {
    const s = scratch();
    try {
      const job = start(process.execPath, [join(processFixtures, 'driver.mjs'), JSON.stringify({
        np: 2, script: 'rank.mjs', args: ['--fail', '0', '--how', 'hang', '--others', 'sleep', '--dir', s.dir],
      })], { drainMs: 100 });
      const ok = await new Promise<boolean>((resolve) => {
        const t = setInterval(() => { if (rankPids(s.dir).size === 2) { clearInterval(t); resolve(true); } }, 20);
        setTimeout(() => { clearInterval(t); resolve(false); }, 10_000);
      });
      expect(ok).toBe(true);
      job.child.kill('SIGKILL');
      await job.done;
      expect(await survivors(rankPids(s.dir).values(), 4000)).toEqual([]);
    } finally {
      reap(rankPids(s.dir).values());
      s.remove();
    }
  });
});
