// What a shared object needs from the libraries it links: its version needs
// (readelf -V, section .gnu.version_r), e.g. libc.so.6 -> GLIBC_2.17, and its
// DT_NEEDED list. GNU readelf reads an ELF file of any architecture, so the
// arm64 prebuild is checked on an x86-64 machine too.
// Used by scripts/prebuilds.mjs (no prebuild is written that breaks the
// rules below) and test/packaging/prebuilds.test.ts.
import { execFileSync } from 'node:child_process';

/** The oldest glibc the prebuilds load on: RHEL/Rocky 8, and Node 20's own floor. */
export const GLIBC_FLOOR = '2.28';
/** libgcc_s versions up to GCC 8's (RHEL 8's libgcc): GCC_7.0.0 is the newest it defines. */
export const GCC_FLOOR = '7.0.0';

/** Compares dotted version numbers: negative, zero or positive. */
export function compareVersions(a, b) {
  const x = a.split('.').map(Number), y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** { needed: ['libc.so.6', ...], versions: { 'libc.so.6': ['GLIBC_2.2.5', ...] } } of `file`. */
export function elfNeeds(file) {
  const dynamic = execFileSync('readelf', ['--dynamic', '--wide', file], { encoding: 'utf8' });
  const needed = [...dynamic.matchAll(/\(NEEDED\)\s+Shared library: \[([^\]]+)\]/g)].map((m) => m[1]);
  const info = execFileSync('readelf', ['--version-info', '--wide', file], { encoding: 'utf8' });
  const part = info.split(/^Version needs section/m)[1] ?? '';
  const versions = {};
  let lib = null;
  for (const line of part.split('\n')) {
    const f = /File: (\S+)/.exec(line);
    if (f) versions[(lib = f[1])] = [];
    const n = /Name: (\S+)/.exec(line);
    if (n && lib) versions[lib].push(n[1]);
  }
  return { needed, versions };
}

/**
 * What keeps `file` from loading on glibc >= GLIBC_FLOOR with any
 * libstdc++: one line per problem, none when it is portable.
 */
export function portabilityProblems(file) {
  const { needed, versions } = elfNeeds(file);
  const problems = [];
  for (const lib of needed) {
    if (/^libstdc\+\+/.test(lib)) problems.push(`links ${lib} (libstdc++ must be static)`);
  }
  for (const [lib, names] of Object.entries(versions)) {
    for (const name of names) {
      const m = /^(GLIBC|GLIBCXX|CXXABI|GCC)_([0-9.]+)$/.exec(name);
      if (name === 'GLIBC_PRIVATE') {
        problems.push(`needs ${name} of ${lib} (glibc's internals)`);
      } else if (!m) {
        continue;
      } else if (m[1] === 'GLIBCXX' || m[1] === 'CXXABI') {
        problems.push(`needs ${name} of ${lib} (libstdc++ must be static)`);
      } else if (m[1] === 'GLIBC' && compareVersions(m[2], GLIBC_FLOOR) > 0) {
        problems.push(`needs ${name} of ${lib}, newer than glibc ${GLIBC_FLOOR}`);
      } else if (m[1] === 'GCC' && compareVersions(m[2], GCC_FLOOR) > 0) {
        problems.push(`needs ${name} of ${lib}, newer than GCC 8's libgcc_s`);
      }
    }
  }
  return problems;
}
