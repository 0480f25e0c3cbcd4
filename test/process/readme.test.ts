/**
 * The README's runnable parts: every js block in it is an example file
 * from its first import on, and the examples run as the README says (the
 * tour and pi.mjs under the launcher at every world size, heat.mjs too,
 * backend.mjs under the launcher and both system MPIs; words.mjs in
 * test/objects). The sh blocks of "Across machines" (a hostfile, srun) are
 * what issue 24's cluster test bed is for.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';

import { explain, mpiCommand, nodempi, root, run, systemMpis, worldSizes } from '../helpers/job.js';

// Section heading -> the example its js block shows.
const shown: Record<string, string> = {
  '## A short tour': 'examples/tour.mjs',
  '## Sending plain values': 'examples/words.mjs',
  '## Point-to-point': 'examples/heat.mjs',
  '## Across machines': 'examples/backend.mjs',
};

// The js blocks of the README, each with the heading it is under.
function jsBlocks(): { heading: string; code: string }[] {
  const out: { heading: string; code: string }[] = [];
  let heading = '';
  const lines = readFileSync(join(root, 'README.md'), 'utf8').split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (/^#+ /.test(lines[i]!)) heading = lines[i]!;
    if (lines[i] === '```js') {
      const end = lines.indexOf('```', i + 1);
      out.push({ heading, code: lines.slice(i + 1, end).join('\n') + '\n' });
      i = end;
    }
  }
  return out;
}

describe('README', () => {
  test('every js block is an example file, as written', () => {
    const blocks = jsBlocks();
    expect(blocks.map((b) => b.heading)).toEqual(Object.keys(shown));
    for (const b of blocks) {
      const file = readFileSync(join(root, shown[b.heading]!), 'utf8');
      expect(b.code, `${b.heading} shows ${shown[b.heading]}`).toBe(file.slice(file.indexOf('import ')));
    }
  });

  for (const np of worldSizes) {
    test(`examples/tour.mjs runs at np=${np}`, async () => {
      const r = await nodempi(['-n', String(np), join(root, 'examples/tour.mjs')]);
      expect(r.status, explain(r)).toBe(0);
      const columns = Array.from({ length: np }, (_, k) => k * 100).join(' ');
      expect(r.stdout.trim()).toBe(`tour done on ${np} ranks: column 0 of each rank ${columns} max 4 5`);
    });
    test(`examples/heat.mjs gives the same rod at np=${np}`, async () => {
      const r = await nodempi(['-n', String(np), join(root, 'examples/heat.mjs')]);
      expect(r.status, explain(r)).toBe(0);
      expect(r.stdout.trim()).toBe(`heat after 20 steps on ${np} ranks: total 46, first cells 1.4765 1.5317 1.6250 1.7310`);
    });
  }

  test('examples/pi.mjs computes pi at np=4', async () => {
    const r = await nodempi(['-n', '4', join(root, 'examples/pi.mjs'), '2000000']);
    expect(r.status, explain(r)).toBe(0);
    expect(r.stdout).toMatch(/^pi ≈ 3\.14159265\d+ \(error \d\.\d\de-\d+\) from 2000000 intervals on 4 ranks/);
  });

  test('examples/backend.mjs names the shm backend under the launcher', async () => {
    const r = await nodempi(['-n', '2', join(root, 'examples/backend.mjs')]);
    expect(r.status, explain(r)).toBe(0);
    expect(r.stdout.trim().split('\n').sort()).toEqual([0, 1].map((k) =>
      `rank ${k}: shm backend, nodempi shared-memory transport (one machine), on ${hostname()}`));
  });
  for (const m of systemMpis) {
    test(`examples/backend.mjs names the library under ${m}`, async () => {
      const c = mpiCommand(m, 2, 60, [process.execPath, join(root, 'examples/backend.mjs')]);
      const r = await run(c.cmd, c.argv, { env: c.env });
      expect(r.status, explain(r)).toBe(0);
      const lib = m === 'openmpi' ? /Open MPI v\d+\.\d+\.\d+/ : /MPICH Version:\s+\d+\.\d+\.\d+/;
      const lines = r.stdout.trim().split('\n').sort();
      expect(lines, explain(r)).toHaveLength(2);
      lines.forEach((l, k) => {
        expect(l.startsWith(`rank ${k}: mpi backend, `), l).toBe(true);
        expect(l).toMatch(lib);
        expect(l.endsWith(`, on ${hostname()}`), l).toBe(true);
      });
    });
  }
});
