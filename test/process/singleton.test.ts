/**
 * `node app.mjs` without the launcher is a world of size 1 (MPI singleton)
 * and every collective works there.
 */
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { cli, explain, start } from '../helpers/job.js';
import { leakedSegments, processFixtures, shmNames } from './util.js';

test('plain node: a world of size 1, collectives work, no segment', async () => {
  const before = shmNames();
  const r = await start(process.execPath, [join(processFixtures, 'coll.mjs')]).done;
  expect(r.status, explain(r)).toBe(0);
  expect(r.stdout).toBe('coll ok rank 0 size 1 sum 1 max 0\n');
  expect(await leakedSegments(before)).toEqual([]);
});

test('plain node: the rank fixture runs as rank 0 of 1', async () => {
  const r = await start(process.execPath, [join(processFixtures, 'rank.mjs'), '--others', 'allreduce']).done;
  expect(r.status, explain(r)).toBe(0);
  expect(r.stdout).toMatch(/^start rank 0 size 1 pid \d+\nrank 0 finished allreduce normally\n$/);
});

test('nodempi -n 1 gives the same world', async () => {
  const r = await start(process.execPath, [cli, join(processFixtures, 'coll.mjs')]).done;
  expect(r.status, explain(r)).toBe(0);
  expect(r.stdout).toBe('coll ok rank 0 size 1 sum 1 max 0\n');
});
