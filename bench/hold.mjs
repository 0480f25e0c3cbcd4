#!/usr/bin/env node
// What holding buffers costs (lib/hold.ts): `node bench/hold.mjs [--quick]`.
//
// Nonblocking and persistent calls, and blocking ones with a user-defined op,
// hold the caller's buffers: a resizable ArrayBuffer is refused, the others
// are marked untransferable ('mark', the default where the runtime honours
// the mark) or copied to private buffers ('copy'). Measured, each group in a
// fresh process of its own (a world of one, no launcher):
//   - marking: markAsUntransferable() on a fresh ArrayBuffer and on one
//     already marked, and WeakSet.has() (what remembering marked buffers
//     would cost instead of marking again);
//   - hold() itself per call, as the collectives call it: the same buffers
//     call after call, fresh buffers at every call, and 'copy' at sizes from
//     8 B to 16 MiB (copy in at the call, copy back at completion);
//   - hasUserOp(), the one check a blocking call without a user op makes;
//   - end to end, COMM_SELF.iallreduce(...).wait() at 8 B under each mode,
//     against the blocking allreduce.
// Each number is the median of 7 timed batches after a warm-up, in each of
// --runs fresh processes (default 5), and then the median over processes.
// Writes bench/results/hold.json and bench/HOLD.md (--quick: one process
// per group, hold-partial.json only).
import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ROOT, parseOptions, runJob, usageError } from './lib/jobs.mjs';

const usage = `usage: node bench/hold.mjs [options]
  --quick          smoke test: one process per group, short batches (writes results/hold-partial.json)
  --runs R         fresh processes per group, median reported (default 5)`;
const opts = parseOptions('hold', usage, {
  quick: { type: 'boolean' }, runs: { type: 'string', default: '5' },
  child: { type: 'string' },   // internal: measure one group in this process
});
const quick = !!opts.quick;
const runs = quick ? 1 : Number(opts.runs);
if (!(Number.isInteger(runs) && runs >= 1)) usageError('hold', usage, '--runs must be a positive integer');

function time(fn, target = quick ? 20 : 150) {
  // Batch size: enough calls for about target/7 ms per batch.
  let n = 1;
  for (;;) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) fn(i);
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    if (ms > target / 7 || n > 1 << 24) break;
    n *= 2;
  }
  const batches = [];
  for (let b = 0; b < 7; b++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < n; i++) fn(i);
    batches.push(Number(process.hrtime.bigint() - t) / n);
  }
  batches.sort((a, b) => a - b);
  return batches[3];
}

async function child(group) {
  const mpi = await import(join(ROOT, 'dist', 'index.js'));
  const { hold, hasUserOp, holdMode } = await import(join(ROOT, 'dist', 'hold.js'));
  const { markAsUntransferable } = await import('node:worker_threads');
  const out = { mode: holdMode() };
  if (group === 'marking') {
    const N = quick ? 1 << 16 : 1 << 20;
    const fresh = Array.from({ length: N }, () => new ArrayBuffer(8));
    let k = 0;
    out.markFresh = time(() => markAsUntransferable(fresh[k++ % N]), 30);
    const ab = new ArrayBuffer(8);
    markAsUntransferable(ab);
    out.markAgain = time(() => markAsUntransferable(ab));
    const seen = new WeakSet([ab]);
    out.weakSetHas = time(() => seen.has(ab));
    const args = [new Float64Array(1), new Float64Array(1), mpi.Op.SUM];
    out.hasUserOp = time(() => hasUserOp(args));
  } else if (group === 'hold-mark') {
    const send = new Float64Array(1), recv = new Float64Array(1), args = [send, recv, mpi.Op.SUM];
    out.sameBuffers = time(() => hold('iallreduce', 'allreduce', args).after());
    out.sameBuffersPersistent = time(() => { const h = hold('allreduceInit', 'allreduce', args); h.before(); h.after(); });
    const N = quick ? 1 << 15 : 1 << 18;
    const pool = Array.from({ length: N }, () => [new Float64Array(1), new Float64Array(1), mpi.Op.SUM]);
    let k = 0;
    out.freshBuffers = time(() => hold('iallreduce', 'allreduce', pool[k++ % N]).after(), 30);
  } else if (group === 'hold-copy') {
    out.sizes = {};
    for (const bytes of [8, 1024, 64 * 1024, 1 << 20, 16 << 20]) {
      const send = new Float64Array(bytes / 8), recv = new Float64Array(bytes / 8), args = [send, recv, mpi.Op.SUM];
      out.sizes[bytes] = time(() => hold('iallreduce', 'allreduce', args).after(), bytes >= 1 << 20 ? 400 : undefined);
    }
  } else if (group === 'end-to-end') {
    const S = mpi.COMM_SELF, send = new Float64Array(1), recv = new Float64Array(1);
    out.blocking = time(() => S.allreduce(send, recv));
    out.iWait = time(() => S.iallreduce(send, recv).wait());
  }
  process.stdout.write(JSON.stringify(out));
}

// Median of a group's numbers over `runs` fresh processes, field by field.
async function run(group, env = {}) {
  const all = [];
  for (let i = 0; i < runs; i++) {
    const { points } = await runJob(`hold: ${group}`, process.execPath,
      [fileURLToPath(import.meta.url), '--child', group, ...(quick ? ['--quick'] : [])], { ...process.env, ...env });
    all.push(points[0]);
  }
  const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]; };
  const merge = (objs) => {
    const out = {};
    for (const k of Object.keys(objs[0])) {
      out[k] = typeof objs[0][k] === 'number' ? med(objs.map((o) => o[k])) : typeof objs[0][k] === 'object' ? merge(objs.map((o) => o[k])) : objs[0][k];
    }
    return out;
  };
  return merge(all);
}

const ns = (x) => (x < 1000 ? `${x.toFixed(1)} ns` : x < 1e6 ? `${(x / 1000).toFixed(2)} µs` : `${(x / 1e6).toFixed(2)} ms`);
const size = (b) => (b >= 1 << 20 ? `${b >> 20} MiB` : b >= 1024 ? `${b >> 10} KiB` : `${b} B`);

if (opts.child !== undefined) {
  await child(opts.child);
} else {
  const started = new Date();
  const results = {
    marking: await run('marking'),
    holdMark: await run('hold-mark', { NODEMPI_HOLD: 'mark' }),
    holdCopy: await run('hold-copy', { NODEMPI_HOLD: 'copy' }),
    e2eMark: await run('end-to-end', { NODEMPI_HOLD: 'mark' }),
    e2eCopy: await run('end-to-end', { NODEMPI_HOLD: 'copy' }),
  };
  const m = results.marking, hm = results.holdMark, hc = results.holdCopy;
  const machine = `${os.cpus().length} × ${os.cpus()[0]?.model.trim()}, Node ${process.version}, ${os.platform()} ${os.release()}`;
  const md = `# Holding buffers: what it costs

Generated by \`node bench/hold.mjs\` (${started.toISOString()}, ${machine}; load
average at the start ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}); do not edit by hand. Each number
is the median over ${runs} fresh processes of the median of 7 timed batches
after a warm-up; a world of one (no launcher), so the end-to-end numbers are
the lib's and addon's own overhead, not data movement. On a shared machine
the slower rows (allocation, copies) move most from run to run.

What is held and why: API.md "Buffers", README.md, lib/hold.ts.

## Marking

| what | per call |
|---|--:|
| \`markAsUntransferable()\` on a fresh ArrayBuffer (the first time it is held) | ${ns(m.markFresh)} |
| \`markAsUntransferable()\` on an ArrayBuffer already marked | ${ns(m.markAgain)} |
| \`WeakSet.has()\` of a remembered buffer (the alternative to marking again) | ${ns(m.weakSetHas)} |
| \`hasUserOp()\`: all a blocking call without a user op adds | ${ns(m.hasUserOp)} |

Marking a buffer again costs ${m.markAgain < m.weakSetHas ? 'less' : 'more'} than looking it up in a WeakSet, so
hold() keeps no set of marked buffers; it compares a buffer with the last 8
it checked and marked (none over 1 MiB, so that little memory is kept
alive), which costs less than either, and checks and marks the others. The
first mark of a buffer costs ~${ns(m.markFresh)} (V8 adds a private property to
the object). Blocking calls without a user-defined op never hold: all they
add is hasUserOp().

## hold() per call

| mode | case | per call |
|---|---|--:|
| mark | same two buffers call after call (iallreduce) | ${ns(hm.sameBuffers)} |
| mark | the same, persistent (Init, then the start() check) | ${ns(hm.sameBuffersPersistent)} |
| mark | two fresh small TypedArrays at every call (their ArrayBuffers are made on first access) | ${ns(hm.freshBuffers)} |
${Object.entries(hc.sizes).map(([b, t]) => `| copy | ${size(Number(b))} send and receive (copy in, copy back) | ${ns(t)} |`).join('\n')}

## End to end (COMM_SELF, 8 B)

| mode | blocking \`allreduce\` | \`iallreduce().wait()\` |
|---|--:|--:|
| mark | ${ns(results.e2eMark.blocking)} | ${ns(results.e2eMark.iWait)} |
| copy | ${ns(results.e2eCopy.blocking)} | ${ns(results.e2eCopy.iWait)} |
`;
  const file = quick ? 'hold-partial.json' : 'hold.json';
  writeFileSync(join(ROOT, 'bench', 'results', file), JSON.stringify({ started, machine, results }, null, 2) + '\n');
  if (!quick) writeFileSync(join(ROOT, 'bench', 'HOLD.md'), md);
  console.log(md);
}
