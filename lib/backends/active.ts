/**
 * The backend of this process (lib/backend.ts): shared memory until
 * initialisation chooses (lib/runtime.ts), then fixed for the process.
 */
import type { Backend } from '../backend.js';
import { shm } from './shm.js';

export let backend: Backend = shm;

/** @internal Called once, by lib/runtime.ts, before anything runs on it. */
export function setBackend(b: Backend): void {
  backend = b;
}
