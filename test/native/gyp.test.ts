// binding.gyp (node-gyp: `npm install` from source, the fallback when no
// prebuild fits) must build what CMakeLists.txt builds: the same sources with
// the same flags and defines, and an addon that works. Both read their
// standard, flags, defines and libraries from native/build.json and glob
// their sources; this test checks what each of them makes of that:
//
//  1. CMake is configured with the addon on and writes its compile commands
//     (compile_commands.json; nothing is compiled); node-gyp configures
//     binding.gyp into build/gyp/ and writes its Makefile.
//  2. The sources must be the same files, and every flag and define CMake
//     passes for a file (-O, -f, -m, -std, -D, -W) must be in node-gyp's
//     command, with the same last -O and -std.
//  3. node-gyp builds the addon (incrementally after the first run), and a
//     2-rank allreduce job runs on it (NODEMPI_ADDON, which every rank and
//     the launcher load).
//
// node-gyp runs from a directory of its own, build/gyp/, holding a copy of
// binding.gyp and links to native/ and node_modules/: in the repository root
// it would write into build/, where cmake-js puts build/Release/nodempi.node.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { explain, root, run, runJob } from '../helpers/job.js';

const gypDir = join(root, 'build', 'gyp');
const cmakeDir = join(root, 'build', 'gyp-cmake');
const addon = join(gypDir, 'build', 'Release', 'nodempi.node');

/** npm's own node-gyp: npm (npm test, npx vitest) names it in the environment. */
function nodeGyp(): string {
  const path = process.env.npm_config_node_gyp;
  if (!path) {
    throw new Error('npm_config_node_gyp is not set: run the tests through npm (`npm test` or `npx vitest`), ' +
      'which points it at its bundled node-gyp (and exports npm_config_nodedir from .npmrc)');
  }
  return path;
}

/** The flags that decide what code comes out. */
const meaningful = (t: string) => /^-(O|f|m|std=|D|W(?!l,))/.test(t);
const last = (tokens: string[], prefix: string) => tokens.filter((t) => t.startsWith(prefix)).at(-1);

/** CMake: source (relative to the root) -> its compile flags. */
function cmakeCommands(): Map<string, string[]> {
  execFileSync('cmake', ['-S', root, '-B', cmakeDir, '-DNODEMPI_BUILD_ADDON=ON', '-DCMAKE_EXPORT_COMPILE_COMMANDS=ON'],
    { stdio: 'pipe' });
  const db = JSON.parse(readFileSync(join(cmakeDir, 'compile_commands.json'), 'utf8')) as { file: string; command: string }[];
  return new Map(db.map((c) => [relative(root, c.file), c.command.split(/\s+/).filter(meaningful)]));
}

/** node-gyp: its sources and the flags of its Release compile command (one set for the target). */
function gypCommand(): { sources: string[]; flags: string[] } {
  mkdirSync(gypDir, { recursive: true });
  copyFileSync(join(root, 'binding.gyp'), join(gypDir, 'binding.gyp'));
  for (const dir of ['native', 'node_modules']) {
    if (!existsSync(join(gypDir, dir))) symlinkSync(relative(gypDir, join(root, dir)), join(gypDir, dir));
  }
  execFileSync(process.execPath, [nodeGyp(), 'configure', '--loglevel=warn'], { cwd: gypDir, stdio: 'pipe' });
  const mk = readFileSync(join(gypDir, 'build', 'nodempi.target.mk'), 'utf8');
  // `NAME := \` then one value a line, each but the last ending in `\`.
  const list = (name: string) => {
    const m = new RegExp(`^${name} :=((?:.*\\\\\\n)*.*)$`, 'm').exec(mk);
    if (!m) throw new Error(`build/gyp/build/nodempi.target.mk has no ${name}`);
    return m[1].split(/[\s\\]+/).filter(Boolean).map((t) => t.replace(/^'(.*)'$/, '$1'));
  };
  // The compile rule's order: DEFS, CFLAGS, then CFLAGS_CC (C++ only).
  const flags = [...list('DEFS_Release'), ...list('CFLAGS_Release'), ...list('CFLAGS_CC_Release')];
  const sources = list('OBJS').map((o) => o.replace(/^\$\(obj\)\.target\/\$\(TARGET\)\//, '').replace(/\.o$/, '.cc'));
  return { sources, flags };
}

describe('binding.gyp against CMakeLists.txt', () => {
  let cmake: Map<string, string[]>;
  let gyp: { sources: string[]; flags: string[] };
  beforeAll(() => {
    cmake = cmakeCommands();
    gyp = gypCommand();
  }, 120_000);

  it('compiles the same sources', () => {
    expect(gyp.sources.length).toBeGreaterThan(10);
    expect([...gyp.sources].sort()).toEqual([...cmake.keys()].sort());
  });

  it('with the flags and defines CMake uses', () => {
    for (const [file, flags] of cmake) {
      const missing = flags.filter((f) => !gyp.flags.includes(f));
      expect(missing, `${file}: CMake passes ${missing.join(' ')}, binding.gyp does not`).toEqual([]);
      for (const prefix of ['-O', '-std=']) {
        expect(last(gyp.flags, prefix), `${file}: the last ${prefix}`).toBe(last(flags, prefix));
      }
    }
  });

  it('builds an addon that runs a 2-rank allreduce', async () => {
    const build = await run(process.execPath, [nodeGyp(), 'build', '--jobs=2', '--loglevel=warn', `--directory=${gypDir}`]);
    expect(build.status, explain(build)).toBe(0);
    expect(existsSync(addon)).toBe(true);
    const r = await runJob(2, 'coll/allreduce.mjs', [], { env: { NODEMPI_ADDON: addon } });
    expect(r.status, explain(r)).toBe(0);
    expect(r.stdout).toMatch(/^allreduce: rank 1 passed \d+ checks$/m);
  }, 900_000);
});
