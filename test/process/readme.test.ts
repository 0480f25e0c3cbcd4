/**
 * The README's runnable parts: its code blocks are examples/tour.mjs and
 * examples/words.mjs from their first import on, and the tour and
 * examples/pi.mjs run under the launcher at every world size (words.mjs in
 * test/objects).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';

import { explain, nodempi, root, worldSizes } from '../helpers/job.js';

describe('README', () => {
  test.each([['## A short tour', 'examples/tour.mjs'], ['## Sending plain values', 'examples/words.mjs']])('%s shows %s', (section, example) => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const block = /```js\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf(section)))?.[1];
    const file = readFileSync(join(root, example), 'utf8');
    expect(block).toBe(file.slice(file.indexOf('import ')));
  });

  for (const np of worldSizes) {
    test(`examples/tour.mjs runs at np=${np}`, async () => {
      const r = await nodempi(['-n', String(np), join(root, 'examples/tour.mjs')]);
      expect(r.status, explain(r)).toBe(0);
      const columns = Array.from({ length: np }, (_, k) => k * 100).join(' ');
      expect(r.stdout.trim()).toBe(`tour done on ${np} ranks: column 0 of each rank ${columns} max 4 5`);
    });
  }

  test('examples/pi.mjs computes pi at np=4', async () => {
    const r = await nodempi(['-n', '4', join(root, 'examples/pi.mjs'), '2000000']);
    expect(r.status, explain(r)).toBe(0);
    expect(r.stdout).toMatch(/^pi ≈ 3\.14159265\d+ \(error \d\.\d\de-\d+\) from 2000000 intervals on 4 ranks/);
  });
});
