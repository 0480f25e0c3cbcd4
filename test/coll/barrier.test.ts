import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe } from 'vitest';

import { collectiveSuite } from './suite.js';

// test/fixtures/coll/barrier.mjs: marker files show that no rank leaves a
// barrier before every rank has entered it, late ranks included.
describe('barrier', () => {
  collectiveSuite('barrier', 'lets no rank out before all are in', {
    args: () => [mkdtempSync(join(tmpdir(), 'nodempi-barrier-'))],
    after: ([dir]) => rmSync(dir!, { recursive: true, force: true }),
  });
});
