/**
 * Packaging: `npm pack` (whose prepack runs build:ts and
 * scripts/prebuilds.mjs), then an install of the tarball into an empty
 * folder with every compiler disabled, then a 2-rank job with the installed
 * `nodempi` command and a require() of the package from CommonJS.
 *
 * The pack makes the linux-x64 prebuild only (NODEMPI_PREBUILDS): the
 * linux-arm64 one, its cross build and its checks under qemu are
 * test/packaging/prebuilds.test.ts's, and building it twice would double
 * this test's time.
 *
 * The pack runs in a copy of the package's sources (package.json, lib/,
 * native/, scripts/, build files; node_modules), not in the repository
 * itself: prepack replaces prebuilds/ and writes dist/, which every other
 * suite running meanwhile may be reading. The copy is removed afterwards,
 * prebuilds with it.
 *
 * The copy lies under build/, and in its node_modules the packages whose
 * headers the addon's compile reads (node-addon-api; node-api-headers,
 * which cmake-js finds from where cmake-js is installed) are copies, the
 * rest links: every path in the copy's compile commands is then inside
 * the copy, the same relative to its build directory as the repository's
 * are to npm test's own build/, so CI's ccache (CCACHE_BASEDIR, .ci/run)
 * gives it that build's objects instead of compiling them a second time.
 * The tarball and the app it is installed into stay in the system's
 * temporary directory, away from the repository's node_modules, where an
 * import the installed package cannot resolve itself would otherwise
 * succeed.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, expect, test } from 'vitest';
import { root } from '../helpers/job.js';
import { leakedSegments, shmNames } from './util.js';

const exec = promisify(execFile);
const tmp = mkdtempSync(join(tmpdir(), 'nodempi-pack-'));
mkdirSync(join(root, 'build'), { recursive: true });
const copy = mkdtempSync(join(root, 'build', 'pack-'));
afterAll(() => {
  rmSync(tmp, { recursive: true, force: true });
  rmSync(copy, { recursive: true, force: true });
});

// Whatever npm needs, and nothing that would make it build from source.
const npmEnv: NodeJS.ProcessEnv = { ...process.env, npm_config_nodedir: '/usr', npm_config_update_notifier: 'false' };
for (const k of ['NODEMPI_RANK', 'NODEMPI_SIZE', 'NODEMPI_FD', 'NODEMPI_ADDON']) delete npmEnv[k];

// The pack compiles the addon: 116-147 s in CI's runs before ccache served
// its objects, and over 150 s in one whose other worker ran heavy jobs
// meanwhile (2 cores); a run without ccache still takes that long.
async function sh(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = npmEnv) {
  try {
    return await exec(cmd, args, { cwd, env, maxBuffer: 64 * 1024 * 1024, timeout: 400_000 });
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}: ${e.message}\n--- stdout\n${e.stdout}\n--- stderr\n${e.stderr}`);
  }
}

test('npm pack, install with no compiler, run the installed nodempi, require() from CommonJS', async () => {
  const before = shmNames();

  // 1. A copy of the package sources, packed there.
  const src = join(copy, 'src');
  for (const f of ['package.json', 'package-lock.json', '.npmrc', 'tsconfig.json', 'binding.gyp', 'CMakeLists.txt', 'README.md',
    'LICENSE', 'lib', 'native', 'scripts', 'packaging']) {
    if (existsSync(join(root, f))) cpSync(join(root, f), join(src, f), { recursive: true });
  }
  // node_modules: each package linked, but for the header packages and
  // cmake-js (so that it finds node-api-headers in the copy), which are
  // copied (under 1 MB).
  mkdirSync(join(src, 'node_modules'));
  for (const name of readdirSync(join(root, 'node_modules'))) {
    const from = join(root, 'node_modules', name);
    if (['cmake-js', 'node-addon-api', 'node-api-headers'].includes(name)) {
      cpSync(from, join(src, 'node_modules', name), { recursive: true });
    } else {
      symlinkSync(from, join(src, 'node_modules', name));
    }
  }
  const packed = await sh('npm', ['pack', '--json', '--pack-destination', tmp], src, { ...npmEnv, NODEMPI_PREBUILDS: 'linux-x64' });
  // prepack's own output (tsc, the compiler) comes first on stdout; npm's JSON is last.
  const info = JSON.parse(packed.stdout.slice(packed.stdout.search(/^\[$/m))) as { filename: string; files: { path: string }[] }[];
  const tarball = join(tmp, info[0]!.filename);
  expect(existsSync(tarball)).toBe(true);
  const files = info[0]!.files.map((f) => f.path);
  expect(files).toContain('prebuilds/linux-x64/nodempi.glibc.node');
  expect(files).toContain('scripts/install.cjs');
  expect(files).toContain('dist/index.js');
  expect(files).toContain('dist/index.d.ts');
  expect(files).toContain('dist/cli.js');
  expect(files.some((f) => f.startsWith('build/'))).toBe(false);
  expect(files).toContain('LICENSE');
  // Source maps lead to sources that are in the package.
  const maps = files.filter((f) => f.endsWith('.js.map'));
  expect(maps.length).toBeGreaterThan(10);
  for (const m of maps) {
    for (const s of (JSON.parse(readFileSync(join(src, m), 'utf8')) as { sources: string[] }).sources) {
      expect(files, `${m} maps to ${s}`).toContain(join(dirname(m), s));
    }
  }
  expect(existsSync(join(src, 'prebuilds', 'linux-x64', 'nodempi.glibc.node'))).toBe(true);

  // 2. Installed into an empty folder; compiling anything would fail.
  const app = join(tmp, 'app');
  cpSync(join(root, 'test', 'fixtures', 'process', 'pack-app'), app, { recursive: true });
  await sh('npm', ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund'], app,
    { ...npmEnv, CC: '/bin/false', CXX: '/bin/false', MAKE: '/bin/false' });
  const installed = join(app, 'node_modules', 'nodempi');
  expect(existsSync(join(installed, 'prebuilds', 'linux-x64', 'nodempi.glibc.node'))).toBe(true);
  expect(existsSync(join(installed, 'build')), 'nothing was compiled at install').toBe(false);

  // 3. The installed command runs a 2-rank job importing 'nodempi' by name.
  const bin = join(app, 'node_modules', '.bin', 'nodempi');
  const job = await sh(bin, ['-n', '2', '--tag-output', 'app.mjs'], app);
  expect(job.stdout.split('\n').filter(Boolean).sort()).toEqual([
    '[0] app rank 0 of 2 sum 3 loaded from node_modules/nodempi',
    '[1] app rank 1 of 2 sum 3 loaded from node_modules/nodempi',
  ]);

  // 4. require() of the ESM package from CommonJS (Node >= 20.19).
  const cjs = await sh(process.execPath, ['app.cjs'], app);
  expect(cjs.stdout).toBe('cjs function 1 6\n');

  // The package came from the prebuild, not from this checkout.
  writeFileSync(join(app, 'where.cjs'), "console.log(require.resolve('nodempi'))\n");
  const where = await sh(process.execPath, ['where.cjs'], app);
  expect(where.stdout.trim()).toBe(join(installed, 'dist', 'index.js'));
  expect(readdirSync(join(installed, 'prebuilds'))).toEqual(['linux-x64']);
  expect(await leakedSegments(before)).toEqual([]);
}, 480_000);
