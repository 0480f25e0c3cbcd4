/**
 * Requests of nonblocking and persistent collectives. The backend runs them
 * (shm: the native progress engine, a thread per communicator; mpi: the
 * library, polled from the event loop); completions reach the main thread
 * through the event loop (for `await`) or through test()/wait().
 */
import { backend } from './backends/active.js';
import { UNDEFINED } from './constants.js';
import { describe, fail, MPIError, retitle } from './errors.js';
import type { Datatype } from './datatype.js';
import type { Held } from './hold.js';
import { releaseStatus, Status } from './p2p/status.js';

/** How a collective binding is asked to run (not exported by the package). */
export const enum Mode {
  BLOCKING = 0,
  NONBLOCKING = 1,
  PERSISTENT = 2,
}

// Requests in flight by native id. Holding them here keeps their buffers
// alive until completion even if the caller drops the Request.
const inflight = new Map<number, Request<unknown>>();

// Requests that completed with nobody waiting and were never awaited,
// waited for or tested since, by call: said once when the program ends.
const unawaited = new Map<string, number>();
process.once('beforeExit', () => {
  if (unawaited.size === 0) return;
  const calls = [...unawaited].map(([call, n]) => (n > 1 ? `${call} x${n}` : call)).join(', ');
  process.emitWarning(`nonblocking requests completed but never awaited, waited for or tested: ${calls}. ` +
    'A failure of theirs went unnoticed, and their buffers may have been read before they were filled.', { code: 'NODEMPI_UNAWAITED' });
});

function deliver(done: unknown[]): void {
  for (let i = 0; i < done.length; i += 2) {
    inflight.get(done[i] as number)?._complete(done[i + 1] as Error | null);
  }
}

function track(id: number, req: Request<unknown>): void {
  inflight.set(id, req);
  backend.requests.watch(deliver);
}

// Work to run around a request (derived datatypes: repack before each start
// of a persistent request, unpack after completion). Handed over by the
// collective that creates the request, right before the constructor runs.
interface Hooks {
  before: (() => void)[];
  after: (() => void)[];
}
let nextHooks: Hooks | null = null;
/** @internal */
export function setNextHooks(h: Hooks): void {
  nextHooks = h;
}
// The method that made the request ('iallreduce'), for its errors, and
// what holds its buffers (lib/hold.ts).
let nextCall = '';
let nextHeld: Held | null = null;
/** @internal */
export function setNextCall(call: string, held: Held | null): void {
  nextCall = call;
  nextHeld = held;
}

/**
 * A nonblocking operation in flight (MPI_Request). Awaitable: `await req`
 * completes without blocking the event loop (a receive's gives its Status);
 * a failed operation rejects with an MPIError.
 */
export class Request<T = void> implements PromiseLike<T> {
  #id: number;
  #keep: unknown[] | null;
  #completed: boolean;
  // Reported: a completion call (test, wait, waitAny, an awaited settle) has
  // returned this round to the caller. Until then the request stays active
  // for waitAny, as in MPI, even if the engine finished it meanwhile.
  #reported: boolean;
  // Completed while nobody was waiting, and not reported since (counted in
  // `unawaited` until it is).
  #unawaited = false;
  #error: Error | null = null;
  #promise: Promise<T> | null = null;
  // A receive's status array as the backend fills it (from lib/p2p/status.ts's
  // pool: read into #status and given back at completion), and the
  // receive's datatype.
  #raw: Float64Array | null = null;
  #type: Datatype | null = null;
  #status: Status | null = null;
  #settle: ((err: Error | null) => void) | null = null;
  /** @internal */
  protected _hooks: Hooks | null;
  /** @internal */
  protected _held: Held | null;
  /** @internal Told of the outcome once, as the request completes (its communicator's count). */
  _onEnd: ((err: Error | null) => void) | null = null;
  #call: string;

  /** @internal */
  constructor(id: number, keep: unknown[], active = true) {
    this.#id = id;
    this.#keep = keep;
    this._hooks = nextHooks;
    nextHooks = null;
    this.#call = nextCall;
    this._held = nextHeld;
    nextCall = '';
    nextHeld = null;
    this.#completed = !active;
    this.#reported = !active;
    if (active) track(id, this);
  }

  /**
   * @internal A receive: its status is `raw` ([source, tag, byteLength, ...],
   * from takeStatus()) once complete.
   */
  _receives(raw: Float64Array, type: Datatype): this {
    this.#raw = raw;
    this.#type = type;
    return this;
  }

  /** @internal Completed as it was made (a peer mpi.PROC_NULL), still to be reported once. */
  _completedNow(status: Status | null): this {
    this.#status = status;
    this.#reported = false;
    return this;
  }

  /** A completed receive's status (MPI_Status); null for other requests and before completion. */
  get status(): Status | null {
    return this.#status;
  }

  // What awaiting gives: a receive's status, else nothing.
  #value(): T {
    return (this.#status ?? undefined) as T;
  }

  /** True once the operation has completed (successfully or not). */
  get completed(): boolean {
    return this.#completed;
  }

  /** MPI_Test: completes the request if it can; never blocks. Throws if it failed. */
  test(): boolean {
    if (!this.#completed) {
      const r = backend.requests.test(this.#id);
      if (r === undefined) return false;
      this._complete(r);
    }
    this.#report();
    this.#throwIfFailed();
    return true;
  }

  /** MPI_Wait: blocks the calling thread until complete. Throws if it failed. */
  wait(): void {
    if (!this.#completed) {
      this._complete(backend.requests.wait(this.#id));
      // wait() may have run earlier requests on this thread; they are
      // delivered here rather than through the event loop.
      if (inflight.size > 0) deliver(backend.requests.drain());
    }
    this.#report();
    this.#throwIfFailed();
  }

  then<T1 = T, T2 = never>(
    onfulfilled?: ((value: T) => T1 | PromiseLike<T1>) | null,
    onrejected?: ((reason: unknown) => T2 | PromiseLike<T2>) | null,
  ): Promise<T1 | T2> {
    if (!this.#promise) {
      if (this.#completed) this.#report();
      this.#promise = this.#completed
        ? (this.#error ? Promise.reject(this.#error) : Promise.resolve(this.#value()))
        : new Promise<T>((resolve, reject) => {
            this.#settle = (err) => {
              this.#report();
              if (err) reject(err);
              else resolve(this.#value());
            };
          });
    }
    return this.#promise.then(onfulfilled, onrejected);
  }

  /** As Promise.prototype.catch: `req.catch(f)` is `req.then(undefined, f)`. */
  catch<E = never>(onrejected?: ((reason: unknown) => E | PromiseLike<E>) | null): Promise<T | E> {
    return this.then(undefined, onrejected);
  }

  /** As Promise.prototype.finally: `f` runs once the request completes, either way. */
  finally(onfinally?: (() => void) | null): Promise<T> {
    return this.then().finally(onfinally);
  }

  /** @internal Called once per round when the engine reports completion. */
  _complete(err: Error | null): void {
    if (this.#completed) return;
    this.#completed = true;
    if (err && this.#call) retitle(err, this.#call);
    this.#error = err;
    inflight.delete(this.#id);
    if (!err && (this._hooks || this._held)) {
      try {
        if (this._hooks) for (const f of this._hooks.after) f();
        this._held?.after();
      } catch (e) {
        this.#error = e as Error;
      }
    }
    if (!(this instanceof PersistentRequest)) this.#keep = null;
    if (this.#raw) {
      this.#status = new Status()._set(this.#raw, this.#type!);
      releaseStatus(this.#raw);
      this.#raw = null;
    }
    const end = this._onEnd;
    this._onEnd = null;
    end?.(this.#error);
    const settle = this.#settle;
    this.#settle = null;
    // A failed unpack or copy-back fails the awaited promise too.
    settle?.(this.#error);
    if (!this.#reported && this.#call) {
      this.#unawaited = true;
      unawaited.set(this.#call, (unawaited.get(this.#call) ?? 0) + 1);
    }
  }

  #report(): void {
    this.#reported = true;
    if (!this.#unawaited) return;
    this.#unawaited = false;
    const n = unawaited.get(this.#call)! - 1;
    if (n > 0) unawaited.set(this.#call, n);
    else unawaited.delete(this.#call);
  }

  /** @internal Starts a new round under a new native id (persistent requests). */
  protected _restart(id: number): void {
    this.#id = id;
    this.#completed = false;
    this.#reported = false;
    // An unreported round stays counted: it was never looked at.
    this.#unawaited = false;
    this.#error = null;
    this.#promise = null;
    this.#settle = null;
    track(id, this);
  }

  #throwIfFailed(): void {
    if (this.#error) throw this.#error;
  }

  /** MPI_Waitall: waits for every request; throws the first failure after all have completed. */
  static waitAll(reqs: Request<unknown>[]): void {
    checkList('Request.waitAll', reqs);
    let first: unknown = null;
    for (const r of reqs) {
      try {
        r.wait();
      } catch (err) {
        first ??= err;
      }
    }
    if (first) throw first;
  }

  /** MPI_Testall: true when every request has completed; never blocks. */
  static testAll(reqs: Request<unknown>[]): boolean {
    checkList('Request.testAll', reqs);
    let all = true;
    for (const r of reqs) all = r.test() && all;
    return all;
  }

  /**
   * MPI_Waitany: blocks until one active request completes and returns its
   * index (mpi.UNDEFINED for an empty list or one with no active request).
   * A request stays active until a completion call has returned it, so each
   * round is returned exactly once. Throws if that request failed.
   */
  static waitAny(reqs: Request<unknown>[]): number {
    checkList('Request.waitAny', reqs);
    const active: number[] = [];
    for (let i = 0; i < reqs.length; i++) {
      if (!reqs[i]!.#reported) active.push(i);
    }
    if (active.length === 0) return UNDEFINED;
    for (const i of active) {
      if (reqs[i]!.test()) return i;
    }
    const k = backend.requests.waitAny(active.map((i) => reqs[i]!.#id));
    const i = active[k]!;
    reqs[i]!.wait();
    return i;
  }
}

/**
 * A persistent collective (MPI_*_init): inactive until start(), which runs
 * one round; complete it with wait()/test()/await before starting again.
 */
export class PersistentRequest extends Request {
  #template: number;
  #freed = false;

  /** @internal */
  constructor(template: number, keep: unknown[]) {
    super(-template, keep, false);
    this.#template = template;
  }

  /** MPI_Start: begins one round. Every rank starts its requests in the same order. */
  start(): this {
    if (this.#freed) fail('ERR_REQUEST', 'PersistentRequest.start', 'the request has been freed');
    if (!this.completed) fail('ERR_REQUEST', 'PersistentRequest.start', 'the previous round is still active; wait for it first');
    this._held?.before();
    if (this._hooks) for (const f of this._hooks.before) f();
    this._restart(backend.requests.start(this.#template));
    return this;
  }

  /** MPI_Startall. */
  static startAll(reqs: PersistentRequest[]): void {
    checkList('PersistentRequest.startAll', reqs);
    for (const r of reqs) {
      if (!(r instanceof PersistentRequest)) fail('ERR_REQUEST', 'PersistentRequest.startAll', `${describe(r)} is not a PersistentRequest`);
    }
    for (const r of reqs) r.start();
  }

  /** MPI_Request_free: releases an inactive persistent request. */
  free(): void {
    if (this.#freed) return;
    if (!this.completed) fail('ERR_REQUEST', 'PersistentRequest.free', 'the request is active; wait for it before freeing it');
    this.#freed = true;
    backend.requests.freeTemplate(this.#template);
  }
}

function checkList(call: string, reqs: unknown): asserts reqs is Request[] {
  if (!Array.isArray(reqs)) fail('ERR_REQUEST', call, `expected an array of Requests, got ${describe(reqs)}`);
  reqs.forEach((r, i) => {
    if (!(r instanceof Request)) throw new MPIError('ERR_REQUEST', `${call}: element ${i} is ${describe(r)}, not a Request`);
  });
}
