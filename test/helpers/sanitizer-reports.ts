/**
 * Under `npm run test:asan` (scripts/test-asan.sh): a sanitizer report from
 * any process a test starts (its ranks, the launcher, tools) fails that test.
 *
 * The script points ASAN_OPTIONS and UBSAN_OPTIONS at NODEMPI_SANITIZER_LOGS
 * (log_path: one file per reporting process). Here each test worker moves
 * its children's reports into a directory of its own, by rewriting the two
 * variables in its own environment, which every rank inherits (the launcher
 * passes its environment on); after each test, a report found there fails
 * that test and moves on to `reported/`. The script counts every report
 * left anywhere under the log directory at the end, so one written too
 * late for its test still fails the run. Does nothing without the variable.
 * A log that only says an allocation was refused is not a report.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach } from 'vitest';

const logs = process.env.NODEMPI_SANITIZER_LOGS;

/** `options` (a sanitizer's a:b=c:d list) with log_path set to `path`. */
function withLogPath(options: string | undefined, path: string): string {
  const kept = (options ?? '').split(':').filter((o) => o && !o.startsWith('log_path='));
  return [...kept, `log_path=${path}`].join(':');
}

if (logs) {
  const mine = join(logs, `worker-${process.pid}`);
  const reported = join(logs, 'reported');
  mkdirSync(mine, { recursive: true });
  mkdirSync(reported, { recursive: true });
  process.env.ASAN_OPTIONS = withLogPath(process.env.ASAN_OPTIONS, join(mine, 'asan'));
  process.env.UBSAN_OPTIONS = withLogPath(process.env.UBSAN_OPTIONS, join(mine, 'ubsan'));

  // With allocator_may_return_null (scripts/test-asan.sh), an allocation
  // too large for the machine fails as it would without ASan, which says so
  // in a log of its own: a refusal the program handles, not a report.
  const refusalOnly = /^(==\d+==WARNING: AddressSanitizer failed to allocate 0x[0-9a-f]+ bytes\n)+$/;

  afterEach(() => {
    for (const f of readdirSync(mine)) {
      if (refusalOnly.test(readFileSync(join(mine, f), 'utf8'))) rmSync(join(mine, f));
    }
    const files = readdirSync(mine);
    if (files.length === 0) return;
    const texts = files.map((f) => {
      const text = readFileSync(join(mine, f), 'utf8');
      renameSync(join(mine, f), join(reported, `${process.pid}-${f}`));
      return `--- ${f}\n${text}`;
    });
    throw new Error(`${files.length} sanitizer report(s) from processes this test started:\n${texts.join('\n')}`);
  });
}
