/**
 * The emulated cluster from a test: bringing it up and down (up.sh,
 * down.sh beside this file), and the command lines that start a job on it
 * the ways cluster users start theirs. Every command runs "on" the first
 * host (on-host.sh), as a user logged in there would type it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { explain, run, start, type JobResult, type Started } from '../helpers/job.js';

export const here = dirname(fileURLToPath(import.meta.url));
const onHost = join(here, 'on-host.sh');
const agent = join(here, 'agent.sh');

/** The ways a job is started on the test bed. */
export const launchers = ['mpirun', 'mpiexec', 'srun-pmix', 'srun-pmi2', 'salloc-mpirun', 'sbatch'] as const;
export type ClusterLauncher = (typeof launchers)[number];

/** What up.sh reports. */
export interface Bed {
  /** Host names, the first runs slurmctld and every client command. */
  hosts: string[];
  /** Network namespace of each host. */
  ns: Record<string, string>;
  /** Directory every host sees (hostfile, Slurm's configuration, job scripts and output). */
  state: string;
  /** The private subnet, e.g. 10.77.0.0/24. */
  net: string;
  /** SLURM_CONF, when Slurm runs. */
  slurmConf: string | null;
}

/** Why the test bed cannot run here, or null when it can. */
export function missing(): string | null {
  if (process.platform !== 'linux') return 'network namespaces need Linux';
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  const need = ['/usr/sbin/munged', '/usr/sbin/slurmctld', '/usr/sbin/slurmd', '/usr/bin/srun', '/usr/bin/mpirun.openmpi', '/usr/bin/mpiexec.mpich'];
  const absent = need.filter((p) => !existsSync(p));
  return absent.length ? `missing ${absent.join(', ')} (apt-get install slurmctld slurmd slurm-client munge openmpi-bin mpich)` : null;
}

/**
 * Brings up the hosts and Slurm (up.sh --slurm), first removing what a
 * killed run left. Until down() runs, a watcher removes everything as
 * soon as this process ends, however it ends.
 */
export async function up(): Promise<Bed> {
  const r = await run(join(here, 'up.sh'), ['--slurm', '--watch', String(process.pid)], { limitMs: 90_000 });
  if (r.status !== 0) throw new Error(`test/cluster/up.sh failed\n${explain(r)}`);
  const bed: Bed = { hosts: [], ns: {}, state: '', net: '', slurmConf: null };
  for (const line of r.stdout.split('\n')) {
    const [a, b, c] = line.split(' ');
    if (a === 'state') bed.state = b!;
    else if (a === 'net') bed.net = b!;
    else if (a === 'slurm') bed.slurmConf = b!;
    else if (a && b && c) {
      bed.hosts.push(a);
      bed.ns[a] = b;
    }
  }
  mkdirSync(jobsDir(bed), { recursive: true });
  return bed;
}

/** Removes everything up() made (down.sh). */
export async function down(): Promise<JobResult> {
  return run(join(here, 'down.sh'), [], { limitMs: 90_000 });
}

export interface ClusterJob {
  /** The command as typed on the first host (after on-host.sh). */
  argv: string[];
  env: Record<string, string>;
}

/** Open MPI's TCP between hosts, on the test bed's subnet only. */
function ompiNet(bed: Bed): string[] {
  return ['--mca', 'pml', 'ob1', '--mca', 'btl', 'self,tcp', '--mca', 'btl_tcp_if_include', bed.net, '--mca', 'oob_tcp_if_include', bed.net];
}

/**
 * The command that runs `np` ranks of `node script args` over both hosts
 * under `how`, with the launcher's own time limit where it has one. The
 * sbatch job is a script in the state directory; its output goes to
 * sbatchOutput(bed).
 */
export function clusterJob(bed: Bed, how: ClusterLauncher, np: number, timeoutSec: number, script: string, args: string[] = []): ClusterJob {
  const node = [process.execPath, script, ...args];
  const slurm = { SLURM_CONF: bed.slurmConf ?? '' };
  const minutes = String(Math.ceil(timeoutSec / 60));
  switch (how) {
    case 'mpirun':
      return {
        argv: ['mpirun.openmpi', '--allow-run-as-root', '--hostfile', join(bed.state, 'hostfile'), '--map-by', 'node', '-n', String(np),
          '--mca', 'plm_rsh_agent', agent, ...ompiNet(bed), '--timeout', String(timeoutSec), ...node],
        env: {},
      };
    case 'mpiexec':
      return {
        argv: ['mpiexec.mpich', '-launcher', 'ssh', '-launcher-exec', agent, '-hosts', bed.hosts.join(','), '-n', String(np), ...node],
        env: { MPIEXEC_TIMEOUT: String(timeoutSec) },
      };
    case 'srun-pmix':
    case 'srun-pmi2':
      return {
        argv: ['srun', '-N', String(bed.hosts.length), '-n', String(np), `--mpi=${how.slice(5)}`, '--kill-on-bad-exit=1', `--time=${minutes}`, ...node],
        env: slurm,
      };
    case 'salloc-mpirun':
      return {
        argv: ['salloc', '-N', String(bed.hosts.length), '-n', String(np), `--time=${minutes}`,
          'mpirun.openmpi', '--allow-run-as-root', ...ompiNet(bed), '--timeout', String(timeoutSec), ...node],
        env: slurm,
      };
    case 'sbatch': {
      const file = join(bed.state, 'job.sh');
      writeFileSync(file, [
        '#!/bin/sh',
        `#SBATCH --nodes=${bed.hosts.length}`,
        `#SBATCH --ntasks=${np}`,
        `#SBATCH --time=${minutes}`,
        `#SBATCH --output=${sbatchOutput(bed)}`,
        `MPIEXEC_TIMEOUT=${timeoutSec} exec mpiexec.mpich ${node.map(quote).join(' ')}`,
        '',
      ].join('\n'), { mode: 0o755 });
      return { argv: ['sbatch', '--wait', file], env: slurm };
    }
  }
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Where the sbatch job writes its output (%j: the job id). */
export function sbatchOutput(bed: Bed): string {
  return join(bed.state, 'sbatch-%j.out');
}

/**
 * Runs the job from the first host and returns its result; an sbatch job's
 * output file becomes its stdout. Past the hard limit (the launcher's
 * own plus a minute) the command is killed and the result says `hung`.
 */
export async function runOnCluster(bed: Bed, how: ClusterLauncher, np: number, script: string, args: string[] = [],
  opts: { timeoutSec?: number; env?: Record<string, string> } = {}): Promise<JobResult> {
  const timeoutSec = opts.timeoutSec ?? 120;
  const job = clusterJob(bed, how, np, timeoutSec, script, args);
  const r = await onHostRun(bed, bed.hosts[0]!, job.argv, { ...job.env, ...opts.env }, (timeoutSec + 60) * 1000);
  if (how === 'sbatch') r.stdout += sbatchLog(bed, r.stdout);
  r.stderr += crashReport(bed, r);
  return r;
}

/**
 * Where every command on the bed runs, on every host (the state directory
 * is shared): the launchers start their ranks in the directory they were
 * started from, so a rank that crashes leaves its core file here (on-host.sh
 * lifts the core size limit; the kernel's default core_pattern, "core",
 * names a file in the working directory).
 */
export function jobsDir(bed: Bed): string {
  return join(bed.state, 'jobs');
}

/**
 * The stack of each core file a crashed rank of job `r` left in jobsDir (gdb;
 * each core removed once read), so that a segfault in a CI run says where
 * it happened; '' when there is none. A crash without a core says where
 * the kernel put it instead.
 */
export function crashReport(bed: Bed, r: JobResult): string {
  const cores = readdirSync(jobsDir(bed)).filter((f) => /^core(\.\d+)?$/.test(f));
  let out = '';
  for (const f of cores) {
    const core = join(jobsDir(bed), f);
    // The crashed thread's stack first, while it is short: past its native
    // frames come V8's, which say nothing, and a CI log may keep only the
    // ends of a long report.
    const gdb = ['-batch', '-nx', '-iex', 'set print thread-events off', '-ex', 'bt 20', '-ex', 'info threads'];
    const g = spawnSync('gdb', [...gdb, process.execPath, core], { encoding: 'utf8', timeout: 120_000, maxBuffer: 1 << 24 });
    // Without its warnings (mapped files the core names that are gone) and blank lines.
    const said = (g.stdout + g.stderr).split('\n').filter((l) => l.trim() && !l.startsWith('warning: ')).join('\n');
    out += `\n--- ${f}, a crashed rank's core: gdb says\n${g.error ? g.error.message : said}`;
    rmSync(core, { force: true });
  }
  if (!cores.length && /Segmentation fault|signal 11\b/.test(r.stdout + r.stderr)) {
    out += `\n--- no core file in ${jobsDir(bed)} (kernel.core_pattern: ${readFileSync('/proc/sys/kernel/core_pattern', 'utf8').trim()})`;
  }
  return out;
}

/**
 * What an sbatch job has written to its output file so far, found from the
 * job id that `sbatch` printed on `stdout` ('' before it has).
 */
export function sbatchLog(bed: Bed, stdout: string): string {
  const id = /Submitted batch job (\d+)/.exec(stdout)?.[1];
  const out = id ? sbatchOutput(bed).replace('%j', id) : null;
  return out && existsSync(out) ? readFileSync(out, 'utf8') : '';
}

/**
 * Runs `argv` on `host` (on-host.sh) in a process group of its own,
 * killed whole past `limitMs`.
 */
export function onHostRun(bed: Bed, host: string, argv: string[], env: Record<string, string> = {}, limitMs = 120_000): Promise<JobResult> {
  return onHostStart(bed, host, argv, env, limitMs).done;
}

/** onHostRun that returns at once, with the output so far readable. */
export function onHostStart(bed: Bed, host: string, argv: string[], env: Record<string, string> = {}, limitMs = 120_000): Started {
  return start(onHost, [host, ...argv], { env: { SLURM_CONF: bed.slurmConf ?? '', ...env }, limitMs, detached: true, cwd: jobsDir(bed) });
}

/** Sets the link of `host` (its eth0) down or up, as a pulled cable would. */
export async function setLink(bed: Bed, host: string, state: 'up' | 'down'): Promise<void> {
  const r = await run('ip', ['-n', bed.ns[host]!, 'link', 'set', 'eth0', state], { limitMs: 10_000 });
  if (r.status !== 0) throw new Error(`ip link set ${state} on ${host}\n${explain(r)}`);
}

/**
 * Brings Slurm's node `host` back after its link came back, and waits
 * until it is idle. slurmctld sets it DOWN when it stops answering, or
 * DRAINED when a job's processes there could not be ended in time (an
 * allocation that ended while the link was down): resumed again while it
 * is either, since a job still completing there can drain it after the
 * first resume.
 */
export async function resumeNode(bed: Bed, host: string, limitMs = 90_000): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    const r = await onHostRun(bed, bed.hosts[0]!, ['sinfo', '-h', '-N', '-n', host, '-o', '%T'], {}, 10_000);
    const state = r.stdout.trim();
    if (state === 'idle') return;
    if (Date.now() - t0 > limitMs) throw new Error(`Slurm's node ${host} is not idle again: ${state}`);
    if (/^(down|drain|drained|draining)\b/.test(state)) {
      await onHostRun(bed, bed.hosts[0]!, ['scontrol', 'update', `nodename=${host}`, 'state=resume'], {}, 10_000);
    }
    await new Promise((f) => setTimeout(f, 1000));
  }
}
