/**
 * Every environment variable nodempi reads is documented: in `nodempi
 * --help` and in the README. The names are found in the sources (process.env
 * and env reads and lib/settings.ts's table in lib/, getenv and the tuning
 * reader in native/), so a new variable without documentation fails here.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';

import { root } from '../helpers/job.js';

// Between the launcher and its ranks, or for the tests: not for users.
const INTERNAL = new Set(['NODEMPI_FD', 'NODEMPI_LAUNCHER_PID', 'NODEMPI_WATCHDOG']);

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|cc|h)$/.test(e.name))
    .map((e) => readFileSync(join(e.parentPath, e.name), 'utf8'));
}

test('every NODEMPI_* variable read is in --help and the README', () => {
  const read = new Set<string>();
  for (const text of [...sources(join(root, 'lib')), ...sources(join(root, 'native'))]) {
    // Reads (lib: env.X, env['X'], setting(env, 'X'); native: getenv("X"),
    // the tuning reader's env("X"), choice("X", whole("X"), and the keys of
    // lib/settings.ts's table (`  X: [`).
    const reads = /(?:env\.|env\[['"]|setting\([^,()]+,\s*'|getenv\(\s*"|get\(\s*"|env\(\s*"|(?:choice|whole)\(\s*")(NODEMPI_[A-Z_]+)|^\s+(NODEMPI_[A-Z_]+): \[/gm;
    for (const m of text.matchAll(reads)) read.add((m[1] ?? m[2])!);
  }
  const documented = [...read].filter((v) => !INTERNAL.has(v)).sort();
  expect(documented).toContain('NODEMPI_BACKEND');
  for (const v of ['NODEMPI_SLOT_KB', 'NODEMPI_SPIN_US', 'NODEMPI_KERNELS', 'NODEMPI_MPI_PERSISTENT', 'NODEMPI_HOLD', 'NODEMPI_MPI_THREAD_LEVEL']) {
    expect(documented).toContain(v);
  }
  const help = execFileSync(process.execPath, [join(root, 'dist/cli.js'), '--help'], { encoding: 'utf8' });
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  expect(documented.filter((v) => !help.includes(v)), 'missing from nodempi --help').toEqual([]);
  expect(documented.filter((v) => !readme.includes(v)), 'missing from the README').toEqual([]);
});
