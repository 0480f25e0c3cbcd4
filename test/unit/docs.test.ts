/**
 * docs/api, the API reference, is what typedoc makes of lib/'s doc comments
 * now: regenerated into a temporary directory and compared file by file
 * (`npm run docs` rewrites it). typedoc and the TypeScript it needs (<= 6;
 * the package builds with 7) live in tools/docs, installed here if absent.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

import { root } from '../helpers/job.js';

const tools = join(root, 'tools/docs');
const out = mkdtempSync(join(tmpdir(), 'nodempi-docs-'));

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)))
    .sort();
}

describe('docs/api', () => {
  beforeAll(() => {
    if (!existsSync(join(tools, 'node_modules/.bin/typedoc'))) {
      execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: tools, stdio: 'pipe' });
    }
    execFileSync(join(tools, 'node_modules/.bin/typedoc'), ['--options', 'typedoc.json', '--out', out], { cwd: tools, stdio: 'pipe' });
  }, 180_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  test('is up to date with the doc comments (npm run docs)', () => {
    const want = files(out), have = files(join(root, 'docs/api'));
    expect(have).toEqual(want);
    for (const f of want) {
      expect(readFileSync(join(root, 'docs/api', f), 'utf8'), `docs/api/${f}`).toBe(readFileSync(join(out, f), 'utf8'));
    }
  });

  test('documents the public API', () => {
    const comm = readFileSync(join(out, 'classes/Comm.md'), 'utf8');
    for (const m of ['allreduce', 'iallreduce', 'allreduceInit', 'bcastObject', 'send', 'irecv', 'sendrecvReplace', 'createIntercomm']) {
      expect(comm).toContain(`### ${m}()`);
    }
    expect(readFileSync(join(out, 'classes/Status.md'), 'utf8')).toContain('### count()');
  });

  // The README's code blocks are run by test/process/readme.test.ts; one
  // that appears here (an example in a doc comment) needs a test too.
  test('holds no code block that no test runs', () => {
    const blocks = files(out).filter((f) => readFileSync(join(out, f), 'utf8').includes('```'));
    expect(blocks).toEqual([]);
  });
});
