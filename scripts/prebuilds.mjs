#!/usr/bin/env node
// Builds the prebuilt addons that the package ships, one per target, into
// prebuilds/<platform>-<arch>/nodempi.glibc.node (npm's prepack runs it):
//
//   node scripts/prebuilds.mjs [--out DIR] [--clean] [target...]
//
// Targets: linux-x64 and linux-arm64 (both by default; NODEMPI_PREBUILDS,
// a comma-separated list, chooses others). The one matching this machine is
// built with its compiler, the other with Debian's cross compiler
// (apt: g++-x86-64-linux-gnu or g++-aarch64-linux-gnu) through
// packaging/toolchain-<triple>.cmake. Each is cmake-js's build of
// CMakeLists.txt with NODEMPI_PORTABLE (static libstdc++, no glibc symbol
// newer than 2.28: packaging/glibc_compat.cc), in build-prebuild-<target>/
// (incremental; --clean starts afresh), stripped, and checked by
// scripts/elf-needs.mjs before it is written.
//
// The file name carries node-gyp-build's `glibc` tag, so that on a musl
// system (Alpine) node-gyp-build passes over it instead of loading a binary
// that cannot work there; none is built for musl (README.md, Development,
// says why).
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { machine } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { GLIBC_FLOOR, portabilityProblems } from './elf-needs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Node's platform-arch -> the machine (uname -m) and the GNU triple of its compilers. */
export const TARGETS = {
  'linux-x64': { machine: 'x86_64', triple: 'x86_64-linux-gnu' },
  'linux-arm64': { machine: 'aarch64', triple: 'aarch64-linux-gnu' },
};
export const PREBUILD_NAME = 'nodempi.glibc.node';

/**
 * CMake's build directory for a target: one level under the root, like
 * npm run build's build/, so that each source is named by the same path
 * relative to both builds. CI's ccache (CCACHE_BASEDIR, .ci/run) hashes
 * those relative paths, and the linux-x64 build, in this checkout or in
 * the copy test/process/npm-pack-install.test.ts packs, then takes npm
 * run build's objects instead of compiling them again.
 * @param {string} target
 * @returns {string}
 */
export const buildDir = (target) => join(root, `build-prebuild-${target}`);

function fail(message) {
  console.error(`prebuilds: ${message}`);
  process.exit(1);
}

/** True when `cmd --version` runs. */
function runs(cmd) {
  return spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;
}

function build(target, outRoot, clean) {
  const t = TARGETS[target];
  const native = t.machine === machine();
  const compiler = native ? 'c++' : `${t.triple}-g++`;
  const strip = native ? 'strip' : `${t.triple}-strip`;
  if (!runs(compiler) || !runs(strip)) {
    fail(`${target} needs ${compiler} and ${strip}, not found` +
      (native ? ' (Debian/Ubuntu: apt-get install g++)' : ` (Debian/Ubuntu: apt-get install g++-${t.triple.replaceAll('_', '-')})`) +
      `; NODEMPI_PREBUILDS=${Object.keys(TARGETS).filter((k) => TARGETS[k].machine === machine()).join(',') || '<target>'}` +
      ' builds fewer targets');
  }
  const dir = buildDir(target);
  if (clean) rmSync(dir, { recursive: true, force: true });
  const defs = ['--CDNODEMPI_PORTABLE=ON'];
  if (!native) defs.push(`--CDCMAKE_TOOLCHAIN_FILE=${join(root, 'packaging', `toolchain-${t.triple}.cmake`)}`);
  const t0 = Date.now();
  // configure first: `build` alone keeps an existing cache as it is.
  for (const step of ['configure', 'build']) {
    const r = spawnSync(process.execPath, [join(root, 'node_modules', 'cmake-js', 'bin', 'cmake-js'), step,
      '--log-level', 'warn', '--out', dir, ...defs], { cwd: root, stdio: 'inherit' });
    if (r.status !== 0) fail(`cmake-js ${step} failed for ${target}`);
  }
  const built = join(dir, 'Release', 'nodempi.node');
  const outDir = join(outRoot, target);
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const out = join(outDir, PREBUILD_NAME);
  copyFileSync(built, out);
  execFileSync(strip, ['--strip-all', out]);
  const problems = portabilityProblems(out);
  if (problems.length > 0) {
    rmSync(outDir, { recursive: true, force: true });
    fail(`${target}: the addon would not load on every glibc >= ${GLIBC_FLOOR}:\n  ${problems.join('\n  ')}\n` +
      'see packaging/glibc_compat.cc for how a newer symbol is kept out');
  }
  const kib = (f) => `${Math.round(statSync(f).size / 1024)} KiB`;
  console.log(`prebuilds: ${target} -> ${out} (${kib(out)} stripped, ${kib(built)} before; ` +
    `${((Date.now() - t0) / 1000).toFixed(0)} s)`);
}

function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: { out: { type: 'string' }, clean: { type: 'boolean', default: false } },
  });
  const wanted = positionals.length > 0 ? positionals
    : (process.env.NODEMPI_PREBUILDS ?? Object.keys(TARGETS).join(',')).split(',').map((s) => s.trim()).filter(Boolean);
  for (const target of wanted) {
    if (!TARGETS[target]) fail(`unknown target ${target}; known: ${Object.keys(TARGETS).join(', ')}`);
  }
  const outRoot = resolve(values.out ?? join(root, 'prebuilds'));
  // prebuilds/ holds the targets built now and nothing else, so a stale
  // binary never ships; with --out only the targets built are replaced.
  if (!values.out) rmSync(outRoot, { recursive: true, force: true });
  for (const target of wanted) build(target, outRoot, values.clean);
}

// Run as a program; the test imports TARGETS and PREBUILD_NAME.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
