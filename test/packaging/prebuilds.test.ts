/**
 * The prebuilt addons the package ships (scripts/prebuilds.mjs): linux-x64
 * and linux-arm64, for glibc >= 2.28 with no particular libstdc++.
 *
 *  1. Both are built (the arm64 one with Debian's cross compiler) into
 *     build/test-prebuilds/, and their ELF headers are read: the right
 *     machine, no glibc version above 2.28, no libstdc++ (it is static),
 *     libgcc_s no newer than GCC 8's, and only Node-API's entry points
 *     exported. This machine's own build fails the same rules, so they bite.
 *  2. The x64 one loads and runs jobs on Debian 11's glibc 2.31 (older than
 *     2.34, where pthread and dl moved into libc), through that glibc's own
 *     loader (test/packaging/runtimes.ts fetches it).
 *  3. The arm64 one runs under qemu-user on Node's own arm64 build over
 *     Debian 11's arm64 runtime: the NEON kernel table is the one chosen,
 *     and reduction fixtures pass at np 2 with it forced, their results
 *     checked against values each rank computes independently; the C++
 *     kernels test runs on the arm64 core too. Everything is slow under
 *     emulation: two fixtures and the kernels test, about 2 minutes of CPU.
 *  4. Installing where no prebuild fits (another libc, here musl) with no
 *     compiler ends in one message saying what is missing, not node-gyp's
 *     errors.
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, explain, fixtures, root, run } from '../helpers/job.js';
import { elfNeeds, portabilityProblems } from '../../scripts/elf-needs.mjs';
import { PREBUILD_NAME, TARGETS, buildDir } from '../../scripts/prebuilds.mjs';
import { fetchRuntimes, type Runtimes } from './runtimes.js';

const out = join(root, 'build', 'test-prebuilds');
const prebuild = (target: string) => join(out, target, PREBUILD_NAME as string);

// The runtimes the prebuilds run on come over the network (about a minute
// on a fresh machine) while the prebuilds compile: fetched from here on,
// awaited by the tests that use them, whose hooks fail if the fetch does.
let runtimes: Promise<Runtimes>;

beforeAll(async () => {
  runtimes = fetchRuntimes();
  runtimes.catch(() => {});
  const r = await run(process.execPath, [join(root, 'scripts', 'prebuilds.mjs'), '--out', out, 'linux-x64', 'linux-arm64']);
  expect(r.status, explain(r)).toBe(0);
}, 1_500_000);

describe('the prebuilt binaries', () => {
  it('are the targets the package declares (package.json os and cpu)', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { os: string[]; cpu: string[]; files: string[] };
    expect(Object.keys(TARGETS as object).sort()).toEqual(pkg.cpu.map((cpu) => `${pkg.os[0]}-${cpu}`).sort());
    expect(pkg.os).toEqual(['linux']);
    expect(pkg.files).toContain('prebuilds/');
    expect(pkg.files).toContain('scripts/install.cjs');
  });

  it.each([['linux-x64', 'X86-64'], ['linux-arm64', 'AArch64']])('%s: built for %s', (target, machine) => {
    const header = execFileSync('readelf', ['--file-header', prebuild(target)], { encoding: 'utf8' });
    expect(header).toMatch(new RegExp(`Machine:\\s+.*${machine}`));
  });

  it.each(['linux-x64', 'linux-arm64'])('%s: needs glibc <= 2.28, no libstdc++, libgcc_s of GCC 8', (target) => {
    const { needed, versions } = elfNeeds(prebuild(target)) as { needed: string[]; versions: Record<string, string[]> };
    expect(portabilityProblems(prebuild(target))).toEqual([]);
    // The same, spelt out: the newest GLIBC_ version needed.
    const glibc = Object.values(versions).flat().filter((v) => v.startsWith('GLIBC_2.')).map((v) => v.slice('GLIBC_'.length));
    const newest = glibc.sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).at(-1);
    expect(newest && newest.localeCompare('2.28', 'en', { numeric: true }) <= 0, `newest glibc needed: ${newest}`).toBe(true);
    expect(needed.filter((lib) => lib.startsWith('libstdc++'))).toEqual([]);
    expect(Object.values(versions).flat().filter((v) => /^(GLIBCXX|CXXABI)_/.test(v))).toEqual([]);
    // Where glibc < 2.34 keeps pthread_* and dl*.
    expect(needed).toEqual(expect.arrayContaining(['libpthread.so.0', 'libdl.so.2', 'libc.so.6']));
  });

  it.each(['linux-x64', 'linux-arm64'])('%s: exports Node-API\'s entry points and nothing else', (target) => {
    const syms = execFileSync('readelf', ['--dyn-syms', '--wide', prebuild(target)], { encoding: 'utf8' });
    const exported = syms.split('\n').map((l) => l.trim().split(/\s+/))
      .filter((f) => f.length >= 8 && (f[4] === 'GLOBAL' || f[4] === 'WEAK') && f[6] !== 'UND').map((f) => f[7]).sort();
    expect(exported).toEqual(['napi_register_module_v1', 'node_api_module_get_api_version_v1']);
  });

  it('the rules bite: the development build of this machine breaks them', () => {
    const dev = join(root, 'build', 'Release', 'nodempi.node');
    expect(existsSync(dev), 'npm test builds build/Release first').toBe(true);
    const problems = portabilityProblems(dev) as string[];
    expect(problems.some((p) => /libstdc\+\+/.test(p))).toBe(true);
    expect(problems.some((p) => /GLIBC_2\.(29|[3-9]\d)/.test(p))).toBe(true);
  });
});

describe('linux-x64 on glibc 2.31 (Debian 11)', () => {
  let glibc: string[];
  beforeAll(async () => {
    const rt = (await runtimes).amd64;
    const libs = [join(rt, 'lib', 'x86_64-linux-gnu'), join(rt, 'usr', 'lib', 'x86_64-linux-gnu')];
    // This machine's node (Node's own build: glibc >= 2.28) through 2.31's loader.
    glibc = [join(rt, 'lib', 'x86_64-linux-gnu', 'ld-linux-x86-64.so.2'), '--library-path', libs.join(':'), process.execPath];
  }, 300_000);
  const env = () => ({ NODEMPI_ADDON: prebuild('linux-x64') });

  it('loads there, where this machine\'s own build does not', async () => {
    const probe = "import('./dist/native.js').then((m) => console.log(process.report.getReport().header.glibcVersionRuntime, m.native.kernelIsa()))";
    const r = await run(glibc[0]!, [...glibc.slice(1), '-e', probe], { cwd: root, env: env(), limitMs: 60_000 });
    expect(r.status, explain(r)).toBe(0);
    expect(r.stdout).toMatch(/^2\.31 (scalar|avx2|avx512)\n$/);
    const dev = await run(glibc[0]!, [...glibc.slice(1), '-e', probe], {
      cwd: root, env: { NODEMPI_ADDON: join(root, 'build', 'Release', 'nodempi.node') }, limitMs: 60_000,
    });
    expect(dev.status).not.toBe(0);
    expect(dev.stderr).toMatch(/version `GLIBC_2\.3\d' not found/);
  });

  it.each(['processes', 'threads'])('runs a 2-rank job (%s)', async (mode) => {
    // The launcher and every rank on glibc 2.31: each rank process started
    // through the old loader (the `--` form), or worker threads in one.
    const job = mode === 'processes'
      ? ['--', ...glibc, join(fixtures, 'coll', 'allreduce.mjs')]
      : ['--threads', join(fixtures, 'coll', 'bcast.mjs')];
    const r = await run(glibc[0]!, [...glibc.slice(1), cli, '-n', '2', '--timeout', '120', ...job], { env: env(), limitMs: 240_000 });
    expect(r.status, explain(r)).toBe(0);
    expect(r.stdout).toMatch(/rank 0 passed \d+ checks/);
    expect(r.stdout).toMatch(/rank 1 passed \d+ checks/);
  });
});

describe('linux-arm64 under qemu-user (Node arm64, glibc 2.31)', () => {
  let node: string[];
  beforeAll(async () => {
    // qemu-aarch64 runs an arm64 program here; its dynamic loader and
    // libraries come from -L, Debian 11's arm64 runtime.
    const rt = await runtimes;
    node = ['qemu-aarch64', '-L', rt.arm64, rt.node];
  }, 600_000);
  const env = (more: Record<string, string> = {}) => ({ NODEMPI_ADDON: prebuild('linux-arm64'), ...more });

  it('loads on arm64 Node and chooses the NEON kernels; reduceLocal passes', async () => {
    const probe = "import('./dist/native.js').then((m) => console.log(process.arch, m.native.kernelIsa(), " +
      'process.report.getReport().header.glibcVersionRuntime))';
    const r = await run(node[0]!, [...node.slice(1), '-e', probe], { cwd: root, env: env(), limitMs: 120_000 });
    expect(r.status, explain(r)).toBe(0);
    expect(r.stdout).toBe('arm64 neon 2.31\n');
    const local = await run(node[0]!, [...node.slice(1), join(fixtures, 'ops', 'local.mjs')], { env: env(), limitMs: 120_000 });
    expect(local.status, explain(local)).toBe(0);
    expect(local.stdout).toMatch(/passed \d+ checks/);
  }, 300_000);

  // The C++ kernels test against the arm64 build of the core (made by the
  // prebuild's cmake-js build): every kernel against its reference, and the
  // NEON table bit for bit against the scalar one, over many lengths and
  // alignments, with native/build.json's flags at -O2 as CMake builds the
  // tests. Linked statically; its copies for NODEMPI_KERNELS values
  // start through qemu as well (KERNELS_TEST_RUNNER).
  it('test/native/kernels_test.cc passes on arm64, where auto picks NEON', async () => {
    const exe = join(buildDir('linux-arm64'), 'kernels_test');
    const build = JSON.parse(readFileSync(join(root, 'native', 'build.json'), 'utf8')) as { cxxStandard: number; flags: string[] };
    const cc = await run('aarch64-linux-gnu-g++', [`-std=c++${build.cxxStandard}`, ...build.flags, '-O2', '-Werror',
      '-I', join(root, 'native'), join(root, 'test', 'native', 'kernels_test.cc'),
      join(buildDir('linux-arm64'), 'libnodempi_core.a'), '-static', '-pthread', '-o', exe]);
    expect(cc.status, explain(cc)).toBe(0);
    const r = await run('qemu-aarch64', [exe], { env: { KERNELS_TEST_RUNNER: 'qemu-aarch64' }, limitMs: 840_000 });
    expect(r.status, explain(r)).toBe(0);
    expect(r.stdout).toMatch(/kernels_test: \d+ checks, 0 failures \(tables on this CPU: scalar neon; auto picks neon\)/);
  }, 900_000);

  // Every predefined op on every type through a collective (allreduce), and
  // the vector variants (reduce-scatter, gatherv, alltoallv, ...); the
  // launcher runs under qemu too, and starts each rank through it (the `--`
  // form). coll/reduce.mjs and coll/bcast.mjs pass too (40 and 15 s more).
  it.each(['coll/allreduce.mjs', 'vector-coll/v-variants.mjs'])(
    '%s at np 2 with the NEON table', async (fixture) => {
      const r = await run(node[0]!, [...node.slice(1), cli, '-n', '2', '--timeout', '540', '--', ...node, join(fixtures, fixture)],
        { env: env({ NODEMPI_KERNELS: 'neon' }), limitMs: 600_000 });
      expect(r.status, explain(r)).toBe(0);
      expect(r.stderr, 'NEON must be the table in use (no fallback warning)').not.toMatch(/NODEMPI_KERNELS=.* is not/);
      expect(r.stdout).toMatch(/rank 0 passed \d+ checks/);
      expect(r.stdout).toMatch(/rank 1 passed \d+ checks/);
    }, 600_000);
});

describe('install where no prebuild fits', () => {
  // A copy of what an installed package has: package.json, the install
  // script, the prebuilds; node-gyp-build from this checkout.
  const pkg = mkdtempSync(join(tmpdir(), 'nodempi-install-'));
  afterAll(() => rmSync(pkg, { recursive: true, force: true }));
  beforeAll(() => {
    for (const f of ['package.json', 'binding.gyp', 'scripts/install.cjs']) cpSync(join(root, f), join(pkg, f), { recursive: true });
    cpSync(out, join(pkg, 'prebuilds'), { recursive: true });
    symlinkSync(join(root, 'node_modules'), join(pkg, 'node_modules'), 'dir');
  });
  const install = (env: Record<string, string>) =>
    run(process.execPath, [join(pkg, 'scripts', 'install.cjs')], { cwd: pkg, env, limitMs: 60_000 });

  it('uses the prebuild quietly where one fits', async () => {
    const r = await install({ CXX: '/bin/false', MAKE: '/bin/false' });
    expect(r.status, explain(r)).toBe(0);
    expect(r.stderr).toBe('');
  });

  it('says in one message what is missing when nothing can build it (musl, no compiler)', async () => {
    const r = await install({ LIBC: 'musl', CXX: '/bin/false', MAKE: '/bin/false' });
    expect(r.status).toBe(1);
    const here = `${process.platform}-${process.arch} (musl), Node ${process.versions.node}`;
    expect(r.stderr.startsWith(`nodempi: no prebuilt addon loads on ${here}: No native build was found`), r.stderr).toBe(true);
    expect(r.stderr).toContain('This package has prebuilt addons for: linux-arm64, linux-x64 (glibc >= 2.28).');
    expect(r.stderr).toContain('a C++17 compiler (`/bin/false --version` failed), make (`/bin/false --version` failed)');
    expect(r.stderr).not.toMatch(/gyp ERR!/);
    expect(r.stderr.trim().split('\n').length).toBeLessThanOrEqual(5);
  });
});
