/**
 * What SECURITY.md promises: the job's segment is private to its user (a
 * memfd: no path in /dev/shm or anywhere, mode 0600, out of another user's
 * reach through /proc/PID/fd), a copy of a rank that inherited its
 * environment and descriptor cannot join the job, and a process that only
 * copied the environment cannot either.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, fstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { explain, fixtures, root, runJob, start } from '../helpers/job.js';

const { native } = await import(join(root, 'dist', 'native.js'));

describe('the segment', () => {
  test('is a memfd of mode 0600 with no path, that another user cannot open through /proc', () => {
    const names = new Set<string>();
    for (let i = 0; i < 3; i++) {
      const seg = native.segmentCreate(2);
      try {
        // The name only labels the mapping: "nodempi-" and 128 random bits.
        expect(seg.name).toMatch(/^nodempi-[0-9a-f]{32}$/);
        names.add(seg.name);
        const link = `/proc/self/fd/${seg.fd}`;
        expect(readlinkSync(link)).toBe(`/memfd:${seg.name} (deleted)`);
        expect(fstatSync(seg.fd).mode & 0o777).toBe(0o600);
        expect(readdirSync('/dev/shm').filter((n) => n.includes(seg.name.slice(8)))).toEqual([]);
        expect(existsSync(join('/dev/shm', seg.name))).toBe(false);
        expect(readFileSync('/proc/self/maps', 'utf8')).toContain(`/memfd:${seg.name} (deleted)`);
        // Another user cannot open it (root can; the test drops to nobody).
        let refused = '';
        try {
          execFileSync('setpriv', ['--reuid', '65534', '--regid', '65534', '--clear-groups', 'cat', `/proc/${process.pid}/fd/${seg.fd}`], { stdio: 'pipe' });
        } catch (err) {
          refused = String((err as { stderr?: Buffer }).stderr ?? err);
        }
        expect(refused).toMatch(/Permission denied/);
      } finally {
        native.segmentClose(seg.handle);
      }
    }
    expect(names.size).toBe(3);
  });
});

describe('joining a job', () => {
  for (const np of [1, 2, 3]) {
    test(`a copy of rank 0 with its environment and descriptor is refused, and the sums stay right, at np=${np}`, async () => {
      const r = await runJob(np, 'security/claim.mjs', [], { timeoutSec: 60 });
      expect(r.status, explain(r)).toBe(0);
      expect(r.stdout).toMatch(/^claim: rank 0 passed 6 checks$/m);
    });
  }

  test('a process with a copied environment but no descriptor gets a clear error', async () => {
    // fd 3 of this child is closed (stdio has three entries): the copied
    // NODEMPI_FD points at nothing.
    const code = `import('${join(root, 'dist', 'index.js')}').then((mpi) => {
      try { mpi.init(); console.log('joined'); } catch (err) { console.log(err.code + ': ' + err.message); }
    })`;
    const r = await start(process.execPath, ['-e', code], {
      env: { NODEMPI_RANK: '1', NODEMPI_SIZE: '2', NODEMPI_FD: '3' },
    }).done;
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^ERR_INTERN: init: cannot attach the job's shared memory: /);
  });
});
