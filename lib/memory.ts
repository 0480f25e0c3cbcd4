/**
 * MPI_Alloc_mem: memory meant for message buffers.
 */
import { describe, fail } from './errors.js';
import { native } from './native.js';

/**
 * MPI_Alloc_mem: `bytes` zero-filled bytes that start at a page boundary,
 * for buffers that carry large messages, as a Uint8Array over a slightly
 * larger ArrayBuffer. View them as another type with, e.g.,
 * `new Float64Array(m.buffer, m.byteOffset, m.length / 8)`.
 *
 * Both backends move a message from about 64 KiB between processes on
 * one machine by a single copy, which walks the buffer page by page. From
 * 4 MiB on the memory starts at a 2 MiB boundary and is given transparent
 * huge pages where the kernel has them (unless `NODEMPI_HUGE_PAGES=0`),
 * which that copy walks much faster, also for the smaller messages sent
 * from parts of it: 1 MiB messages on the mpi backend from a 16 MiB
 * buffer, less than half the time of those from `new Uint8Array`
 * (bench/P2P.md). `new Float64Array(n)` takes its memory from malloc,
 * whose large blocks start 16 bytes past a page.
 *
 * Callable at any time, before `init()` and after `finalize()` too. The
 * memory is an ordinary ArrayBuffer's, freed by the garbage collector (not
 * the MPI library's MPI_Alloc_mem on the mpi backend; there is no
 * `freeMem`).
 *
 * @param bytes the size, a non-negative integer
 * @throws MPIError ERR_ARG for a bad `bytes`, ERR_OTHER when the memory
 *   cannot be had
 */
export function allocMem(bytes: number): Uint8Array {
  if (!Number.isSafeInteger(bytes) || bytes < 0) {
    fail('ERR_ARG', 'allocMem', `bytes must be a non-negative integer, got ${describe(bytes)}`);
  }
  if (bytes === 0) return new Uint8Array(0);
  // A slack of 0 (no room for it in size_t) fails as too large.
  const length = bytes + (native.memSlack(bytes) || Infinity);
  let ab: ArrayBuffer;
  try {
    ab = new ArrayBuffer(length);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    fail('ERR_OTHER', 'allocMem', `cannot allocate ${bytes} bytes`);
  }
  return new Uint8Array(ab, native.placeMem(ab, bytes), bytes);
}
