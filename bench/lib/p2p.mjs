// What bench/p2p.mjs and its nodempi job share: the flags every point-to-point
// program takes (bench/ompi/osu_p2p.c, bench/mpi4py/osu_p2p.py and
// bench/p2p_job.mjs take the same ones with the same defaults), and the data
// each message carries. The method is described in bench/ompi/osu_p2p.c's
// header and bench/P2P.md.
import { list, parseOptions } from './jobs.mjs';

export const TESTS = ['latency', 'bw'];
export const LAT_TAG = 1, BW_TAG = 100, ACK_TAG = 101;

/** osu_latency's sizes: 0, then 1 B .. 4 MiB by powers of 2. */
export const LAT_SIZES = [0, ...Array.from({ length: 23 }, (_, k) => 2 ** k)];
/** osu_bw's window sizes here: 1 KiB .. 16 MiB by powers of 4. */
export const BW_SIZES = Array.from({ length: 8 }, (_, k) => 1024 * 4 ** k);

/**
 * OSU's counts (osu_latency, osu_bw): warm-up rounds (skip) and timed rounds,
 * fewer above `large` bytes; the window of osu_bw; and the least warm-up
 * time (ms) per size, longer for a test's first size, so that V8 has
 * optimised nodempi's call path before anything is timed.
 */
export const P2P_DEFAULTS = {
  tests: TESTS, latSizes: LAT_SIZES, bwSizes: BW_SIZES, window: 64, large: 8192,
  latIters: 10000, latItersLarge: 1000, latSkip: 100, latSkipLarge: 10,
  bwIters: 100, bwItersLarge: 20, bwSkip: 10, bwSkipLarge: 2,
  warmMs: 50, firstWarmMs: 200,
};

// option name -> field of P2P_DEFAULTS; the list-valued ones first
const FLAGS = {
  tests: 'tests', 'lat-sizes': 'latSizes', 'bw-sizes': 'bwSizes', window: 'window', large: 'large',
  'lat-iters': 'latIters', 'lat-iters-large': 'latItersLarge', 'lat-skip': 'latSkip', 'lat-skip-large': 'latSkipLarge',
  'bw-iters': 'bwIters', 'bw-iters-large': 'bwItersLarge', 'bw-skip': 'bwSkip', 'bw-skip-large': 'bwSkipLarge',
  'warm-ms': 'warmMs', 'first-warm-ms': 'firstWarmMs',
};

export const P2P_USAGE = `point-to-point options (the same in bench/ompi/osu_p2p.c and bench/mpi4py/osu_p2p.py):
  --tests latency,bw  --lat-sizes 0,1,2,...  --bw-sizes 1024,...  --window W  --large B
  --lat-iters N  --lat-iters-large N  --lat-skip N  --lat-skip-large N
  --bw-iters N  --bw-iters-large N  --bw-skip N  --bw-skip-large N  --warm-ms W  --first-warm-ms W  --label L`;

/** The job's command line (argv) as parameters; exits 2 with the usage on a bad one. */
export function parseP2PArgs(argv, name) {
  const table = Object.fromEntries([...Object.keys(FLAGS), 'label'].map((k) => [k, { type: 'string' }]));
  const v = parseOptions(name, `usage: ${name} [options]\n${P2P_USAGE}`, table, argv);
  const o = { ...P2P_DEFAULTS, label: v.label ?? 'nodempi' };
  for (const [flag, field] of Object.entries(FLAGS)) {
    if (v[flag] === undefined) continue;
    o[field] = flag === 'tests' ? list(v[flag]) : field.endsWith('Sizes') ? list(v[flag], Number) : Number(v[flag]);
  }
  for (const t of o.tests) if (!TESTS.includes(t)) throw new Error(`${name}: unknown test ${t} (known: ${TESTS.join(', ')})`);
  return o;
}

/** Parameters as a command line every one of the three programs takes. */
export function p2pArgv(o) {
  return Object.entries(FLAGS).flatMap(([flag, field]) => [`--${flag}`, Array.isArray(o[field]) ? o[field].join(',') : String(o[field])]);
}

/**
 * Byte i of what `sender` sends at size `bytes`: (i + 37 sender + bytes) mod
 * 251, so never 0xff (the poison), and different from one size to the next
 * (a stale buffer from the previous size does not pass).
 */
export const patternByte = (sender, bytes, i) => (i + 37 * sender + bytes) % 251;
export const POISON = 0xff;

export function fillPattern(buf, sender) {
  const n = buf.length;
  for (let i = 0; i < n; i++) buf[i] = patternByte(sender, n, i);
}

/** null when buf holds what `sender` sent, else where it differs. */
export function patternMismatch(buf, sender) {
  const n = buf.length;
  for (let i = 0; i < n; i++) {
    const want = patternByte(sender, n, i);
    if (buf[i] !== want) return `byte ${i} is ${buf[i]}, expected ${want}`;
  }
  return null;
}
