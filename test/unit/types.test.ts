/**
 * The published types (dist/index.d.ts) as a strict TypeScript user meets
 * them: test/types/consumer.ts must compile, readonly arrays and tuples
 * included, and its `@ts-expect-error` lines must be errors.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';

import { root } from '../helpers/job.js';

test('a strict TypeScript program type-checks against dist/index.d.ts', async () => {
  const tsc = join(root, 'node_modules/typescript/bin/tsc');
  const r = await promisify(execFile)(process.execPath, [tsc, '-p', join(root, 'test/types/tsconfig.json')], { cwd: root })
    .then(() => ({ code: 0, out: '' }), (e: { code: number; stdout: string }) => ({ code: e.code, out: e.stdout }));
  expect(r.out).toBe('');
  expect(r.code).toBe(0);
});
