#!/usr/bin/env node
/**
 * The `nodempi` command:
 *   nodempi -n N [options] app.js [args...]
 *   nodempi -n N [options] -- CMD [args...]
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LaunchOptions } from './launch.js';

// dist/cli.js -> the package root. The launcher (and with it the native
// addon) is loaded only once the command line is valid, so --help, --version
// and usage errors work even where the addon cannot load.
const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..');

const usage = `usage: nodempi -n N [options] app.js [args...]
       nodempi -n N [options] -- CMD [args...]

Runs N ranks of an MPI job on this machine.

options:
  -n, --np N        number of ranks (default 1)
  --tag-output      prefix every output line with [rank]
  --timeout SEC     end the whole job after SEC seconds (exit status 124)
  --threads         run the ranks as worker threads of one process
  -h, --help        show this help
  --version         show the nodempi version`;

function die(message: string): never {
  process.stderr.write(`nodempi: ${message}\n${usage}\n`);
  process.exit(2);
}

function parse(argv: string[]): LaunchOptions {
  const o: LaunchOptions = { np: 1, stdin: true };
  let i = 0;
  const value = (flag: string): string => {
    const v = argv[++i];
    if (v === undefined) die(`${flag} needs a value`);
    return v;
  };
  for (; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') {
      const cmd = argv.slice(i + 1);
      if (cmd.length === 0) die('-- must be followed by a command');
      if (o.mode === 'thread') die('--threads runs a script, not a command given after --');
      o.command = cmd;
      return o;
    }
    if (!a.startsWith('-')) {
      o.script = a;
      o.args = argv.slice(i + 1);
      return o;
    }
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a, undefined];
    switch (flag) {
      case '-n': case '-np': case '--np': case '-c': {
        const v = inline ?? value(flag);
        const n = Number(v);
        if (!Number.isInteger(n) || n < 1 || n > 256) die(`${flag} must be an integer from 1 to 256, got ${v}`);
        o.np = n;
        break;
      }
      case '--timeout': {
        const v = inline ?? value(flag);
        const t = Number(v);
        if (!(t > 0 && t <= 2147483)) die(`--timeout must be a positive number of seconds (at most 2147483), got ${v}`);
        o.timeout = t;
        break;
      }
      case '--tag-output':
        o.tagOutput = true;
        break;
      case '--threads':
        o.mode = 'thread';
        break;
      case '-h': case '--help':
        process.stdout.write(usage + '\n');
        process.exit(0);
      case '--version': {
        const pkg = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as { version: string };
        process.stdout.write(pkg.version + '\n');
        process.exit(0);
      }
      default:
        die(`unknown option ${a}`);
    }
  }
  die('no program to run');
}

// A reader that goes away (`nodempi ... | head`) must not crash the
// launcher while ranks still run: drop the output instead.
for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});

const options = parse(process.argv.slice(2));
try {
  const { launchWithSignals } = await import('./launch.js');
  const result = await launchWithSignals(options);
  // A signal to the launcher (SIGINT 130, SIGTERM 143) wins over the ranks' codes.
  process.exitCode = typeof process.exitCode === 'number' && process.exitCode !== 0 ? process.exitCode : result.status;
} catch (err) {
  process.stderr.write(`nodempi: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
