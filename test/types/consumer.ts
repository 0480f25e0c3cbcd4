// A strict TypeScript program against the published types (dist/index.d.ts),
// compiled by test/unit/types.test.ts: what a user writes must type-check,
// and the `@ts-expect-error` lines must not.
import * as mpi from 'nodempi';

const w = mpi.COMM_WORLD;
const buf = new Float64Array(4);

// Readonly arrays and tuples, as `as const` and readonly parameters give them.
const counts = [1, 2] as const;
const displs: readonly number[] = [0, 2];
w.allgatherv(buf.subarray(0, 1), [buf, counts, displs] as const);
w.gatherv(buf, [buf, counts, null, mpi.Datatype.DOUBLE] as const, 0);
w.allreduce(buf, [buf, 2, mpi.Datatype.DOUBLE] as const, mpi.Op.SUM);
w.alltoallw([buf, counts, displs, [mpi.Datatype.DOUBLE, mpi.Datatype.DOUBLE]] as const, [buf, counts, displs, [mpi.Datatype.DOUBLE, mpi.Datatype.DOUBLE]]);
w.reduceScatter(buf, buf, counts);
function total(c: mpi.Comm, parts: readonly number[]): void {
  c.reduceScatter(buf, buf, parts, mpi.Op.MAX);
}
total(w, displs);

// Requests are awaitable and have catch and finally.
const req: mpi.Request = w.iallreduce(buf, buf);
const settled: Promise<unknown> = req.catch((e: unknown) => e).finally(() => undefined);

// Object collectives keep the value's type.
const merged: Map<string, number> = w.allreduceObject(new Map([['a', 1]]), (a, b) => new Map([...a, ...b]));
const sum: number = w.allreduceObject(1, mpi.Op.SUM);
const all: number[] = w.allgatherObject(1);
const first: string | null = w.gatherObject('x', 0)?.[0] ?? null;
const before: Promise<string | undefined> = w.iexscanObject('x', (a, b) => a + b);

// Point-to-point: a receive's Request gives its Status.
async function messages(c: mpi.Comm): Promise<number> {
  c.send(buf, 1, 5);
  const st: mpi.Status = c.recv(buf, mpi.ANY_SOURCE, mpi.ANY_TAG);
  const got: mpi.Status = await c.irecv([buf, 2, mpi.Datatype.DOUBLE] as const, 0);
  const r: mpi.Request<mpi.Status> = c.irecv(buf);
  const later: mpi.Status | null = r.status;
  const probed: mpi.Status | null = c.iprobe();
  const sent: mpi.Request = c.isend(buf, 0, mpi.TAG_UB);
  mpi.Request.waitAll([sent, r]);
  const out = new mpi.Status();
  const value: Map<string, number> = c.recvObject<Map<string, number>>(0, 1, out);
  const v2: number[] = await c.irecvObject<number[]>();
  await c.isendObject(value, 1);
  return st.count(mpi.Datatype.DOUBLE) + got.byteLength + (later?.tag ?? 0) + (probed?.source ?? 0) + v2.length;
}

// @ts-expect-error a tag is a number
w.send(buf, 1, 'x');
// @ts-expect-error counts are numbers
w.allgatherv(buf, [buf, ['1'], [0]]);
// @ts-expect-error an op is an Op or a function of two values
w.allreduceObject(1, 'SUM');
// @ts-expect-error a function op combines two values of the value's type
w.allreduceObject(1, (a: string, b: string) => a + b);

export { all, before, first, merged, messages, settled, sum };
