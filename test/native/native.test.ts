// The C++ tests of the core (test/native/*.cc, registered with CTest by
// CMakeLists.txt's NODEMPI_TESTS): built three times, optimised, under
// AddressSanitizer + UBSan, and (the threaded ones) under ThreadSanitizer,
// and run in their short form. Each CTest test is one test here, so each
// counts in the suite's results.
// `npm run test:asan` and `npm run test:tsan` run the long form.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { explain, root, run } from '../helpers/job.js';

const flavours = [
  // The release build also compiles the C++ benchmarks (NODEMPI_BENCH), so
  // they keep building against the core.
  { name: 'release', options: ['-DNODEMPI_BENCH=ON'] },
  // The sanitizer builds compile the core in batches of sources (CMake's
  // unity build): on 2 cores 66 s instead of 86 (ASan) and 29 instead of 48
  // (TSan). The release build keeps one object per source, so a missing
  // include still fails there, and its objects are the ccache hits of npm
  // test's own build.
  { name: 'asan', options: ['-DNODEMPI_SANITIZE=ON', '-DCMAKE_UNITY_BUILD=ON'] },
  { name: 'tsan', options: ['-DNODEMPI_TSAN=ON', '-DCMAKE_UNITY_BUILD=ON'] },
];

// Configured while the tests are collected: the test names come from CTest.
function configure(dir: string, options: string[]): string[] {
  execFileSync('cmake', ['-S', root, '-B', dir, '-DNODEMPI_TESTS=ON', ...options], { stdio: 'pipe' });
  const listing = execFileSync('ctest', ['--test-dir', dir, '-N', '--show-only=json-v1'],
    { encoding: 'utf8' });
  return (JSON.parse(listing) as { tests: { name: string }[] }).tests.map((t) => t.name);
}

// The short form, whatever the environment says.
const env = { NODEMPI_TEST_LONG: '0' };

for (const flavour of flavours) {
  // One level under the root, like npm run build's build/: the release
  // core's sources then have the same paths relative to both builds, which
  // is what CI's ccache hashes (CCACHE_BASEDIR, .ci/run).
  const dir = join(root, `build-native-${flavour.name}`);
  const tests = configure(dir, flavour.options);

  describe(`C++ tests (${flavour.name})`, () => {
    beforeAll(async () => {
      const r = await run('cmake', ['--build', dir, '--parallel', '2']);
      expect(r.status, explain(r)).toBe(0);
    }, 900_000);

    it('are registered', () => {
      expect(tests.length).toBeGreaterThanOrEqual(4);  // the TSan build has the fewest
    });

    for (const name of tests) {
      it(name, async () => {
        const r = await run('ctest', ['--test-dir', dir, '-R', `^${name}$`, '--output-on-failure', '--no-tests=error'], { env });
        expect(r.status, explain(r)).toBe(0);
      }, 900_000);
    }
  });
}
