/**
 * The call block: one off-heap buffer of 16 doubles that lib and the addon
 * both keep. The numbers of the hottest calls travel in it instead of as
 * N-API arguments, which the addon would unwrap one at a time (several
 * nanoseconds each; bench/P2P.md, bench/CORE.md): point-to-point's
 * (lib/p2p/block.ts) and a replayed collective's (TEMPLATE). Each
 * caller writes its numbers just before its call; nothing runs in between.
 */
import { native } from './native.js';

export const block = new Float64Array(new ArrayBuffer(128));
native.setCallBlock(block.buffer as ArrayBuffer);

/** A replayed collective (the backends' runTemplate): the template's id. */
export const TEMPLATE = 0;

/** Where the addon's wtime() leaves its reading (lib/runtime.ts, wtime). */
export const WTIME = 8;

/**
 * A backend's runTemplate(id) over the addon's `run` (runTemplate or
 * mpiRunTemplate), which reads the id from TEMPLATE and returns undefined
 * once the call has run, false when the template is gone.
 */
export function templateRunner(run: () => undefined | false): (id: number) => boolean {
  return (id) => {
    block[TEMPLATE] = id;
    return run() === undefined;
  };
}
