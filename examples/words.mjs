// Counts words across ranks with plain JavaScript values: rank 0 sends the
// settings to all and deals out the lines, each rank counts its lines' words
// in a Map, and allreduceObject merges the Maps (a function combines them,
// in rank order).
//   nodempi -n 4 examples/words.mjs
import * as mpi from 'nodempi';

const TEXT = `It was the best of times, it was the worst of times,
it was the age of wisdom, it was the age of foolishness,
it was the epoch of belief, it was the epoch of incredulity,
it was the season of Light, it was the season of Darkness,
it was the spring of hope, it was the winter of despair,
we had everything before us, we had nothing before us,
we were all going direct to Heaven, we were all going direct the other way`;

const world = mpi.COMM_WORLD;
const { rank, size } = world;

const settings = world.bcastObject(rank === 0 ? { minLength: 3, top: 4 } : null, 0);
const lines = rank === 0 ? TEXT.split('\n') : [];
const mine = world.scatterObject(rank === 0 ? Array.from({ length: size }, (_, r) => lines.filter((_, i) => i % size === r)) : null, 0);

const counts = new Map();
for (const line of mine) {
  for (const word of line.toLowerCase().match(/[a-z]+/g) ?? []) {
    if (word.length >= settings.minLength) counts.set(word, (counts.get(word) ?? 0) + 1);
  }
}

const merge = (a, b) => {
  const m = new Map(a);
  for (const [word, n] of b) m.set(word, (m.get(word) ?? 0) + n);
  return m;
};
const all = world.allreduceObject(counts, merge);
const total = world.allreduceObject(mine.length, mpi.Op.SUM);
// The i forms return Promises; the event loop runs meanwhile.
const perRank = await world.igatherObject({ rank, lines: mine.length, words: counts.size }, 0);

if (rank === 0) {
  const top = [...all].sort((x, y) => y[1] - x[1] || (x[0] < y[0] ? -1 : 1)).slice(0, settings.top);
  console.log(`${total} lines, ${all.size} distinct words; most frequent: ${top.map(([w, n]) => `${w} ${n}`).join(', ')}`);
  for (const r of perRank) console.log(`  rank ${r.rank}: ${r.lines} lines, ${r.words} distinct words`);
}
