/** What a receive or probe found (MPI_Status). */
import { ANY_SOURCE, ANY_TAG, UNDEFINED } from '../constants.js';
import { checkDatatype, Datatype } from '../datatype.js';

/**
 * A received (or probed) message: who sent it, with which tag, and how
 * long it is. `new mpi.Status()` makes one to pass where a call fills one
 * in (recvObject); it then reads as MPI's empty status.
 */
export class Status {
  /** The sender's rank (in the remote group on an intercommunicator); mpi.PROC_NULL for a receive from it. */
  source: number = ANY_SOURCE;
  /** The message's tag. */
  tag: number = ANY_TAG;
  /** Bytes received (or, after a probe, that the message carries). */
  byteLength = 0;
  // The receive's datatype: what count() counts by default.
  #type: Datatype = Datatype.BYTE;

  /**
   * MPI_Get_count: whole items of `datatype` in the message (by default the
   * datatype the receive used, bytes after a probe); mpi.UNDEFINED when the
   * bytes are not a whole number of them.
   */
  count(datatype?: Datatype): number {
    const t = datatype === undefined ? this.#type : checkDatatype(datatype, 'Status.count', 'datatype');
    if (t.size === 0) return this.byteLength === 0 ? 0 : UNDEFINED;
    return this.byteLength % t.size === 0 ? this.byteLength / t.size : UNDEFINED;
  }

  /** @internal Fills this status from a backend's [source, tag, byteLength, message]. */
  _set(raw: Float64Array, type: Datatype): this {
    this.source = raw[0]!;
    this.tag = raw[1]!;
    this.byteLength = raw[2]!;
    this.#type = type;
    return this;
  }

  /** @internal The receive's datatype, for count(). */
  _setType(type: Datatype): this {
    this.#type = type;
    return this;
  }

  /** @internal The status of a receive from (or probe of) mpi.PROC_NULL. */
  _none(procNull: number): this {
    this.source = procNull;
    this.tag = ANY_TAG;
    this.byteLength = 0;
    return this;
  }
}

// ---- Status arrays of receives in flight ----------------------------------------
//
// A nonblocking receive's backend fills a Float64Array(4) as it completes.
// A new one per call lives on V8's heap, and the addon asking for its memory
// makes V8 move it to a malloc'd backing store of its own: a malloc, a free
// and V8's bookkeeping of the store per receive, a third of a small irecv's
// cost (bench/P2P.md). They are views of shared off-heap chunks instead,
// taken and given back.

const CHUNK = 256;
const free: Float64Array[] = [];

/** @internal A status array for a receive in flight; give it back with releaseStatus(). */
export function takeStatus(): Float64Array {
  if (free.length === 0) {
    const chunk = new ArrayBuffer(CHUNK * 4 * 8);
    for (let i = CHUNK - 1; i >= 0; i--) free.push(new Float64Array(chunk, i * 32, 4));
  }
  return free.pop()!;
}

/** @internal Gives back a status array takeStatus() gave, once nothing writes it any more. */
export function releaseStatus(raw: Float64Array): void {
  free.push(raw);
}
