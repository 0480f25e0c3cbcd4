// Prints "N passed, M failed" from vitest's JSON report; exits non-zero when
// anything failed or the report is missing (the run itself broke).
import { readFileSync } from 'node:fs';

const file = process.argv[2];
let report;
try {
  report = JSON.parse(readFileSync(file, 'utf8'));
} catch (err) {
  console.log(`test report ${file} is missing or unreadable: ${err.message}`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}
let passed = 0, failed = 0, skipped = 0;
for (const suite of report.testResults ?? []) {
  const results = suite.assertionResults ?? [];
  for (const a of results) {
    if (a.status === 'passed') passed++;
    else if (a.status === 'failed') failed++;
    else skipped++;
  }
  // A file that failed before running any test (syntax error, failed
  // import) counts as one failure.
  if (suite.status === 'failed' && !results.some((a) => a.status === 'failed')) failed++;
}
console.log(`${passed} passed, ${failed} failed` + (skipped ? `, ${skipped} skipped` : ''));
process.exit(failed === 0 && passed > 0 ? 0 : 1);
