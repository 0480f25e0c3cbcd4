/**
 * The NODEMPI_* settings are checked before anything uses them: a value
 * that does not parse is refused with ERR_ARG naming the variable, by init
 * in every rank and by the launcher before it starts any, rather than read
 * as the default or as something else (NODEMPI_CHECK_SAME=false is not "0",
 * so a lenient reader takes it for on). An empty value is the same as
 * unset. The core checks the settings it reads (native/core/tuning.h,
 * `settingsErrors`); this file holds the ones only this layer reads, and no
 * import with side effects, so that lib/backends/choose.ts can use it.
 */
import { MPIError } from './errors.js';

/** The settings this layer reads that take one of a few words. */
const CHOICES = {
  NODEMPI_BACKEND: ['shm', 'mpi'],
  NODEMPI_MPI_THREAD_LEVEL: ['funneled', 'single'],
  NODEMPI_HOLD: ['mark', 'copy'],
} as const;

type Setting = keyof typeof CHOICES;

// '"a", "b" or "c"', as the core words its choices.
function words(choices: readonly string[]): string {
  const quoted = choices.map((c) => JSON.stringify(c));
  return quoted.length === 1 ? quoted[0]! : `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}`;
}

function problem(env: NodeJS.ProcessEnv, name: Setting): string | null {
  const v = env[name];
  if (v === undefined || v === '' || (CHOICES[name] as readonly string[]).includes(v)) return null;
  return `${name} must be ${words(CHOICES[name])}, got ${JSON.stringify(v)}`;
}

/** `name`'s value in `env`, undefined when unset or empty; throws ERR_ARG (for `where`) when it is not one of its words. */
export function setting<N extends Setting>(env: NodeJS.ProcessEnv, name: N, where = 'init'): (typeof CHOICES)[N][number] | undefined {
  const bad = problem(env, name);
  if (bad) throw new MPIError('ERR_ARG', `${where}: ${bad}`);
  const v = env[name];
  return v === undefined || v === '' ? undefined : (v as (typeof CHOICES)[N][number]);
}

/**
 * Throws ERR_ARG for `where` naming every setting of `env` that does not
 * parse: this layer's, and the core's as its `settingsErrors` gave them
 * (already joined by '; ', or '').
 */
export function refuseBadSettings(where: string, env: NodeJS.ProcessEnv, coreErrors: string): void {
  const problems = (Object.keys(CHOICES) as Setting[]).map((name) => problem(env, name)).filter((p) => p !== null);
  if (coreErrors) problems.push(coreErrors);
  if (problems.length > 0) throw new MPIError('ERR_ARG', `${where}: ${problems.join('; ')}`);
}
