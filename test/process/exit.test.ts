/**
 * The `nodempi` command's exit paths: normal ends, a lone failing rank, the
 * `-- CMD` form, output tagging, the environment each rank sees, --timeout
 * and bad usage. Every job is checked for leftovers: no new /dev/shm segment
 * and no surviving rank process. Failing ranks and signals to the launcher,
 * at 2 and 8 ranks and in both modes, are in faults.test.ts.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { explain, nodempi } from '../helpers/job.js';
import { ENDS_WITHIN_MS, expectClean, processFixtures, rankJob, rankLines, rankPids, reap, scratch, shmNames } from './util.js';

describe('normal end', () => {
  test.concurrent.each([1, 2, 3, 4])('np %i: every rank exits 0, launcher exits 0, each rank sees NODEMPI_RANK/NODEMPI_SIZE', async (np) => {
    const before = shmNames();
    const r = await nodempi(['-n', String(np), join(processFixtures, 'echo.mjs')]);
    expect(r.status, explain(r)).toBe(0);
    expect(rankLines(r.stderr), explain(r)).toEqual([]);
    const sum = (np * (np - 1)) / 2;
    for (let k = 0; k < np; k++) {
      expect(r.stdout, explain(r)).toContain(`env rank=${k} size=${np} fd=3 world=${k}/${np} sum=${sum}\n`);
    }
    expect(await expectClean(before)).toEqual({ leaked: [], left: [] });
  });

  // glibc.malloc.hugetlb=1 (lib/launch.ts withHugePages): large buffers get
  // MADV_HUGEPAGE; the user's other tunables stay, and their own hugetlb wins.
  // glibc advises only where the kernel's THP mode is `madvise` (with
  // `always` every large mapping is huge anyway, with `never` none is).
  const advised = /\[madvise\]/.test(readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8')) ? 'yes' : 'no';
  test.concurrent.each([
    ['empty', '', advised, 'glibc.malloc.hugetlb=1'],
    ['with other tunables', 'glibc.malloc.arena_max=2', advised, 'glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1'],
    ['turned off by the user', 'glibc.malloc.hugetlb=0', 'no', 'glibc.malloc.hugetlb=0'],
  ])('GLIBC_TUNABLES %s: ranks get huge-page advice as the variable says', async (_name, tunables, hg, seen) => {
    const r = await nodempi(['-n', '2', join(processFixtures, 'hugepages.mjs')], { env: { GLIBC_TUNABLES: tunables } });
    expect(r.status, explain(r)).toBe(0);
    for (const k of [0, 1]) expect(r.stdout, explain(r)).toContain(`rank ${k}: hg=${hg} sum=1 tunables=${seen}\n`);
  });

  test('--tag-output prefixes every line of stdout and stderr with [rank], partial lines included', async () => {
    const np = 3;
    const r = await nodempi(['-n', String(np), '--oversubscribe', '--tag-output', join(processFixtures, 'echo.mjs')]);
    expect(r.status, explain(r)).toBe(0);
    for (const [name, text] of [['stdout', r.stdout], ['stderr', r.stderr]] as const) {
      expect(text.endsWith('\n'), `${name} ends with a newline`).toBe(true);
      for (const line of text.slice(0, -1).split('\n')) {
        expect(line, `${name} line ${JSON.stringify(line)}\n${explain(r)}`).toMatch(/^\[[0-2]\] /);
      }
    }
    for (let k = 0; k < np; k++) {
      expect(r.stdout).toContain(`[${k}] env rank=${k} size=${np} fd=3`);
      expect(r.stdout).toContain(`[${k}] out line 1\n`);
      expect(r.stdout).toContain(`[${k}] out line 2\n`);
      // Written in three pieces with pauses: relayed as one line.
      expect(r.stdout).toContain(`[${k}] piece A piece B piece C\n`);
      // No trailing newline from the rank: relayed as a line of its own.
      expect(r.stdout).toContain(`[${k}] out tail ${k}\n`);
      expect(r.stderr).toContain(`[${k}] err line 1\n`);
      expect(r.stderr).toContain(`[${k}] err tail ${k}\n`);
    }
  });
});

describe('output and input', () => {
  test('--tag-output relays bytes unchanged: invalid UTF-8, a character split across writes', async () => {
    const script = "printf 'a\\377\\376b\\n\\303'; sleep 0.05; printf '\\251\\n'";
    const r = await nodempi(['-n', '1', '--tag-output', '--', 'sh', '-c', script], { encoding: 'latin1' });
    expect(r.status, explain(r)).toBe(0);
    expect(Buffer.from(r.stdout, 'latin1')).toEqual(Buffer.from('[0] a\xff\xfeb\n[0] \xc3\xa9\n', 'latin1'));
  });

  test("rank 0 gets the launcher's stdin, the others none", async () => {
    const r = await nodempi(['-n', '3', '--tag-output', '--', 'sh', '-c', 'cat; echo end'], { input: 'hello\nworld\n' });
    expect(r.status, explain(r)).toBe(0);
    // Other ranks' lines may come between rank 0's: compare rank 0's own, in order.
    expect(r.stdout.split('\n').filter((l) => l.startsWith('[0] '))).toEqual(['[0] hello', '[0] world', '[0] end']);
    expect(r.stdout.match(/^\[[12]\] end$/gm)).toHaveLength(2);
    expect(r.stdout.match(/hello/g)).toHaveLength(1);
  });

  test('a long partial line is relayed in pieces rather than held without bound', async () => {
    // 200 KiB with no newline at all.
    const r = await nodempi(['-n', '1', '--tag-output', '--', process.execPath, '-e', "process.stdout.write('x'.repeat(200 * 1024))"]);
    expect(r.status, explain(r)).toBe(0);
    const lines = r.stdout.split('\n').filter(Boolean);
    expect(lines.length).toBeGreaterThan(1);
    for (const l of lines) expect(l).toMatch(/^\[0\] x+$/);
    expect(lines.reduce((n, l) => n + l.length - 4, 0)).toBe(200 * 1024);
  });
});

describe('a failing rank', () => {
  // Failing ranks at 2 and 8 ranks, in every way, are in faults.test.ts.
  test('np 1: a lone rank that exits 3 -> status 3, one line, nothing left', async () => {
    const s = scratch();
    const before = shmNames();
    try {
      const r = await rankJob(1, ['--fail', '0', '--how', 'exit:3', '--others', 'none', '--dir', s.dir]);
      expect(r.status, explain(r)).toBe(3);
      expect(rankLines(r.stderr), explain(r)).toEqual(['nodempi: rank 0 exited with code 3; ending the job']);
      expect(rankPids(s.dir).size).toBe(1);
      expect(await expectClean(before, s.dir, 1000)).toEqual({ leaked: [], left: [] });
    } finally {
      reap(rankPids(s.dir).values());
      s.remove();
    }
  });
});

describe('the -- CMD form', () => {
  test('-- node --expose-gc script: node flags reach the ranks and MPI works', async () => {
    const before = shmNames();
    const r = await nodempi(['-n', '3', '--', process.execPath, '--expose-gc', join(processFixtures, 'gc.mjs')]);
    expect(r.status, explain(r)).toBe(0);
    for (let k = 0; k < 3; k++) expect(r.stdout).toContain(`gc function rank ${k} size 3 sum 6`);
    expect(await expectClean(before)).toEqual({ leaked: [], left: [] });
  });

  test("-- sh -c 'exit 5': status 5, one line naming a rank and code 5", async () => {
    const r = await nodempi(['-n', '2', '--', 'sh', '-c', 'exit 5']);
    expect(r.status, explain(r)).toBe(5);
    const lines = rankLines(r.stderr);
    expect(lines, explain(r)).toHaveLength(1);
    expect(lines[0]).toMatch(/^nodempi: rank [01] exited with code 5\b/);
  });

  test('-- sh: every rank sees its rank and size; args after the command pass through', async () => {
    const r = await nodempi(['-n', '4', '--tag-output', '--', 'sh', '-c', 'echo "r=$NODEMPI_RANK n=$NODEMPI_SIZE a=$0 b=$1"', 'x', 'y']);
    expect(r.status, explain(r)).toBe(0);
    for (let k = 0; k < 4; k++) expect(r.stdout).toContain(`[${k}] r=${k} n=4 a=x b=y\n`);
  });

  test.concurrent.each([['-n2'], ['-n=2'], ['--np=2'], ['-np', '2'], ['-c', '2'], ['--np', '2']].map((f) => [f.join(' '), f] as const))('%s: two ranks', async (_name, flag) => {
    const r = await nodempi([...flag, '--tag-output', '--', 'sh', '-c', 'echo "n=$NODEMPI_SIZE"']);
    expect(r.status, explain(r)).toBe(0);
    expect(r.stdout.split('\n').filter((l) => l.endsWith('n=2')), explain(r)).toHaveLength(2);
  });

  test("a script's own options are its own, even nodempi's names", async () => {
    const dir = scratch();
    try {
      const script = join(dir.dir, 'args.mjs');
      writeFileSync(script, 'console.log(JSON.stringify(process.argv.slice(2)));\n');
      const r = await nodempi(['-n', '1', script, '-n', '5', '--timeout', '--frob', '--']);
      expect(r.status, explain(r)).toBe(0);
      expect(r.stdout.trim()).toBe('["-n","5","--timeout","--frob","--"]');
    } finally {
      dir.remove();
    }
  });

  test('a command that does not exist: status 127, one line', async () => {
    const r = await nodempi(['-n', '3', '--', '/nonexistent/nodempi-no-such-command']);
    expect(r.status, explain(r)).toBe(127);
    expect(rankLines(r.stderr), explain(r)).toHaveLength(1);
  });
});

describe('--threads (ranks as worker threads of the launcher)', () => {
  test('np 3, tagged: collectives work, status 0', async () => {
    const r = await nodempi(['-n', '3', '--threads', '--tag-output', join(processFixtures, 'coll.mjs')]);
    expect(r.status, explain(r)).toBe(0);
    for (let k = 0; k < 3; k++) expect(r.stdout).toContain(`[${k}] coll ok rank ${k} size 3 sum 6 max 2\n`);
  });
  // Failing ranks and signals to the launcher in thread mode: faults.test.ts.
});

describe('--timeout', () => {
  test('--timeout 1 on a job that sleeps: status 124 promptly, nothing left', async () => {
    const np = 2;
    const s = scratch();
    const before = shmNames();
    try {
      const r = await rankJob(np, ['--fail', '0', '--how', 'hang', '--others', 'sleep', '--dir', s.dir], { launcher: ['--timeout', '1'] });
      expect(r.status, explain(r)).toBe(124);
      expect(r.ms, explain(r)).toBeLessThan(ENDS_WITHIN_MS);
      expect(r.stderr).toMatch(/timeout/);
      expect(rankLines(r.stderr), explain(r)).toEqual([]);
      expect(await expectClean(before, s.dir, 1000)).toEqual({ leaked: [], left: [] });
    } finally {
      reap(rankPids(s.dir).values());
      s.remove();
    }
  });

  test('--timeout=0.5 with ranks blocked in a barrier and in a busy loop', async () => {
    const s = scratch();
    const s2 = scratch();
    const before = shmNames();
    try {
      const r1 = rankJob(3, ['--fail', '0', '--how', 'hang', '--others', 'barrier', '--dir', s.dir], { launcher: ['--timeout=0.5'] });
      const r2 = rankJob(2, ['--fail', '0', '--how', 'hang', '--others', 'loop', '--dir', s2.dir], { launcher: ['--timeout', '0.5'] });
      const [a, b] = await Promise.all([r1, r2]);
      expect(a.status, explain(a)).toBe(124);
      expect(b.status, explain(b)).toBe(124);
      expect(await expectClean(before, s.dir, 1000)).toEqual({ leaked: [], left: [] });
      expect(await expectClean(before, s2.dir, 1000)).toEqual({ leaked: [], left: [] });
    } finally {
      for (const d of [s, s2]) {
        reap(rankPids(d.dir).values());
        d.remove();
      }
    }
  });
});

describe('usage errors exit 2 with a usage message', () => {
  test.concurrent.each([
    ['no program', ['-n', '2']],
    ['no arguments', []],
    ['-n 0', ['-n', '0', 'app.js']],
    ['-n 1.5', ['-n', '1.5', 'app.js']],
    ['-n without a value', ['-n']],
    ['unknown option', ['--frobnicate', 'app.js']],
    ['-- without a command', ['-n', '2', '--']],
    ['--timeout 0', ['--timeout', '0', 'app.js']],
    ['--timeout abc', ['--timeout', 'abc', 'app.js']],
    ['--timeout Infinity', ['--timeout', 'Infinity', 'app.js']],
    ['--threads with -- CMD', ['--threads', '--', 'true']],
    ['--timeout without a value', ['--timeout']],
    ['a boolean option with a value', ['--tag-output=1', 'app.js']],
    ['-n abc', ['-nabc', 'app.js']],
  ])('%s', async (_name, args) => {
    const before = shmNames();
    const r = await nodempi(args);
    expect(r.status, explain(r)).toBe(2);
    expect(r.stderr).toMatch(/^nodempi: /);
    expect(r.stderr).toContain('usage: nodempi -n N');
    expect(await expectClean(before)).toEqual({ leaked: [], left: [] });
  });

  test('--help exits 0 with the usage on stdout; --version prints the version (even where the addon cannot load)', async () => {
    const broken = { env: { NODEMPI_ADDON: '/nonexistent/nodempi.node' } };
    const h = await nodempi(['--help'], broken);
    expect(h.status).toBe(0);
    expect(h.stdout).toContain('usage: nodempi -n N');
    const v = await nodempi(['--version'], broken);
    expect(v.status).toBe(0);
    expect(v.stdout).toMatch(/^\d+\.\d+\.\d+/);
  });
});
