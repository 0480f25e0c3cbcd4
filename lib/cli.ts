#!/usr/bin/env node
/**
 * The `nodempi` command:
 *   nodempi -n N [options] app.js [args...]
 *   nodempi -n N [options] -- CMD [args...]
 */
import { existsSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { LaunchOptions } from './launch.js';

// dist/cli.js -> the package root. The launcher (and with it the native
// addon) is loaded only once the command line is valid, so --help, --version
// and usage errors work even where the addon cannot load.
const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

const usage = `usage: nodempi -n N [options] app.js [args...]
       nodempi -n N [options] -- CMD [args...]

Runs N ranks of an MPI job on this machine.

options:
  -n, --np N        number of ranks (default 1; also -nN, -n=N, -np N, -c N)
  --tag-output      prefix every output line with [rank]
  --timeout SEC     end the whole job after SEC seconds (exit status 124)
  --threads         run the ranks as worker threads of one process
  --oversubscribe   more ranks than cores is intended: no warning
  -h, --help        show this help
  --version         show the nodempi version

Each rank's environment has NODEMPI_RANK and NODEMPI_SIZE. Read by nodempi
(README "Tuning" and "Across machines"):
  NODEMPI_BACKEND=shm|mpi      force a backend (default: mpi under mpirun, mpiexec
                               or srun, else shared memory)
  NODEMPI_MPI_LIB=PATH         the MPI library for the mpi backend
  NODEMPI_CHECK_SAME=1         mpi backend: check that ranks agree on every call
  NODEMPI_CHECK_SAME=0         shared memory: a small bcast's or scatter's root
                               returns without waiting to see that the others
                               called it too, a small gather's other ranks
                               compare with the root alone
  NODEMPI_MPI_PERSISTENT=emulate  mpi backend: persistent calls as nonblocking ones
  NODEMPI_MPI_THREAD_LEVEL=single  mpi backend: MPI_THREAD_SINGLE, not FUNNELED
  NODEMPI_HUGE_PAGES=0         no huge pages for buffers of 4 MiB and more (mpi backend,
                               mpi.allocMem)
  NODEMPI_HOLD=mark|copy       how nonblocking calls hold their buffers
  NODEMPI_SLOT_KB, NODEMPI_CMA, NODEMPI_CMA_MIN, NODEMPI_SPIN_US, NODEMPI_YIELD_US,
  NODEMPI_KERNELS, NODEMPI_ALGO  tune the shared-memory transport
  NODEMPI_ADDON=PATH           load another build of the native addon
A value that does not parse is refused before any rank starts.
The launcher adds glibc.malloc.hugetlb=1 to the ranks' GLIBC_TUNABLES (huge
pages for large arrays) unless it names hugetlb already (README "Tuning").
Warnings are Node's: --no-warnings or NODE_NO_WARNINGS=1 silences them.`;

function die(message: string): never {
  process.stderr.write(`nodempi: ${message}\n${usage}\n`);
  process.exit(2);
}

// Other spellings of -n: -n=N, and MPI launchers' -np N (Open MPI, MPICH)
// and -c N (Open MPI).
function normalize(a: string): string {
  if (a.startsWith('-n=')) return `--np${a.slice(2)}`;
  if (a === '-np' || a.startsWith('-np=')) return `--np${a.slice(3)}`;
  if (a === '-c' || a.startsWith('-c=')) return `--np${a.slice(2)}`;
  if (/^-c\d/.test(a)) return `--np=${a.slice(2)}`;
  return a;
}

const OPTIONS = {
  np: { type: 'string', short: 'n' },
  timeout: { type: 'string' },
  'tag-output': { type: 'boolean' },
  threads: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  oversubscribe: { type: 'boolean' },
} as const;

// nodempi's own options, strictly: an unknown one or a missing value is a
// usage error.
function ours(args: string[]) {
  try {
    return parseArgs({ args, options: OPTIONS, strict: true, allowPositionals: false }).values;
  } catch (err) {
    // node:util's messages, in this command's words.
    return die((err as Error).message.replace(/^Unknown option '([^']*)'.*/s, 'unknown option $1')
      .replace(/^Option '(?:-\w, )?([^' ]*)[^']*' argument missing.*/s, '$1 needs a value'));
  }
}

// The launch options, and whether more ranks than cores is intended.
function parse(argv: string[]): { options: LaunchOptions; oversubscribe: boolean } {
  // nodempi's options end at the program (its own arguments are its own) or
  // at `--` (a command follows): find where, then parse what comes before.
  const args = argv.map(normalize);
  let end = argv.length;
  try {
    const { tokens } = parseArgs({ args, options: OPTIONS, strict: false, allowPositionals: true, tokens: true });
    const first = tokens.find((t) => t.kind === 'positional' || t.kind === 'option-terminator');
    if (first) end = first.index;
  } catch (err) {
    die((err as Error).message);
  }
  const values = ours(args.slice(0, end));
  if (values.help) {
    process.stdout.write(usage + '\n');
    process.exit(0);
  }
  if (values.version) {
    const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string };
    process.stdout.write(pkg.version + '\n');
    process.exit(0);
  }
  const o: LaunchOptions = { np: 1, stdin: true };
  if (values.np !== undefined) {
    const n = Number(values.np);
    if (!/^\d+$/.test(values.np) || n < 1 || n > 256) die(`-n must be an integer from 1 to 256, got ${values.np}`);
    o.np = n;
  }
  if (values.timeout !== undefined) {
    const t = Number(values.timeout);
    if (!(t > 0 && t <= 2147483)) die(`--timeout must be a positive number of seconds (at most 2147483), got ${values.timeout}`);
    o.timeout = t;
  }
  if (values['tag-output']) o.tagOutput = true;
  if (values.threads) o.mode = 'thread';
  if (end === argv.length) die('no program to run');
  if (argv[end] === '--') {
    const cmd = argv.slice(end + 1);
    if (cmd.length === 0) die('-- must be followed by a command');
    if (o.mode === 'thread') die('--threads runs a script, not a command given after --');
    o.command = cmd;
  } else {
    o.script = argv[end];
    o.args = argv.slice(end + 1);
  }
  return { options: o, oversubscribe: values.oversubscribe === true };
}

// A program that is not there: one message, rather than one trace per rank.
// As `node` finds a main script: the name, or with .js, .json or .node.
function checkScript(script: string): void {
  const path = resolve(script);
  if (['', '.js', '.json', '.node'].some((ext) => existsSync(path + ext))) return;
  process.stderr.write(`nodempi: cannot find the program ${script} (no such file)\n`);
  process.exit(1);
}

// A reader that goes away (`nodempi ... | head`) must not crash the
// launcher while ranks still run: drop the output instead.
for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});

const { options, oversubscribe } = parse(process.argv.slice(2));
if (options.script !== undefined) checkScript(String(options.script));
// Ranks that outnumber the cores take turns on them: correct, but waits
// become sleeps and small collectives take far longer.
const cores = availableParallelism();
if (options.np > cores && !oversubscribe) {
  process.emitWarning(`${options.np} ranks on ${cores} cores: ranks take turns on the cores, and small collectives are much slower. ` +
    'nodempi --oversubscribe says this is intended.', { code: 'NODEMPI_OVERSUBSCRIBED' });
}
try {
  const { launchWithSignals } = await import('./launch.js');
  const result = await launchWithSignals(options);
  // A signal to the launcher (SIGINT 130, SIGTERM 143) wins over the ranks' codes.
  process.exitCode = typeof process.exitCode === 'number' && process.exitCode !== 0 ? process.exitCode : result.status;
} catch (err) {
  process.stderr.write(`nodempi: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
