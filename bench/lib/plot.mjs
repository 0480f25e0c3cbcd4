// A dependency-free SVG of latency against message size (log-log), one panel
// per (collective, world size), or per (collective, column) for a caller
// that groups its numbers otherwise, one line per implementation.

const COLORS = {
  nodempi: '#d62728', 'nodempi-nocheck': '#ff9896', sab: '#1f77b4', 'sab-spin': '#17becf', ipc: '#7f7f7f', ompi: '#2ca02c', 'ompi-yield': '#98df8a',
  // bench/backends.mjs
  c: '#2ca02c', 'c-funneled': '#bcbd22', 'c-huge': '#17becf', mpi4py: '#9467bd', 'nodempi-mpi': '#d62728', 'nodempi-mpi-tuned': '#8c564b', 'nodempi-shm': '#ff7f0e',
};
const LABELS = {
  nodempi: 'nodempi', 'nodempi-nocheck': 'nodempi, NODEMPI_CHECK_SAME=0', sab: 'SAB baseline', 'sab-spin': 'SAB spin', ipc: 'IPC baseline', ompi: 'Open MPI', 'ompi-yield': 'Open MPI (yield)',
  c: 'C', 'c-funneled': 'C, MPI_THREAD_FUNNELED', 'c-huge': 'C, huge pages as numpy', mpi4py: 'mpi4py', 'nodempi-mpi': 'nodempi, mpi backend', 'nodempi-mpi-tuned': 'nodempi, mpi backend, tuned',
  'nodempi-shm': 'nodempi, shm backend',
};
// the package's own lines stand out
const BOLD = new Set(['nodempi', 'nodempi-mpi']);

const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;');

function fmtBytes(b) {
  if (b >= 1048576) return `${b / 1048576}M`;
  if (b >= 1024) return `${b / 1024}K`;
  return `${b}`;
}

function fmtUs(v) {
  if (v >= 1e6) return `${v / 1e6}s`;
  if (v >= 1e3) return `${v / 1e3}ms`;
  return `${v}µs`;
}

function panel(medians, coll, column, x0, y0, w, h, impls) {
  const pts = medians.filter((m) => m.coll === coll && column.match(m) && m.bytes > 0);
  if (!pts.length) return '';
  const sizes = [...new Set(pts.map((p) => p.bytes))].sort((a, b) => a - b);
  const ys = pts.map((p) => p.median_us).filter((v) => v > 0);
  const lo = Math.floor(Math.log10(Math.min(...ys))), hi = Math.ceil(Math.log10(Math.max(...ys)));
  const L = 52, R = 18, T = 24, B = 30;
  const X = (b) => x0 + L + (sizes.length === 1 ? 0 : (sizes.indexOf(b) / (sizes.length - 1)) * (w - L - R));
  const Y = (v) => y0 + T + (1 - (Math.log10(v) - lo) / Math.max(1, hi - lo)) * (h - T - B);
  const out = [];
  out.push(`<text x="${x0 + w / 2}" y="${y0 + 15}" text-anchor="middle" font-weight="bold">${esc(coll)}, ${esc(column.title)}</text>`);
  for (let e = lo; e <= hi; e++) {
    const y = Y(10 ** e);
    out.push(`<line x1="${x0 + L}" x2="${x0 + w - R}" y1="${y}" y2="${y}" stroke="#ddd"/>`);
    out.push(`<text x="${x0 + L - 4}" y="${y + 4}" text-anchor="end">${fmtUs(10 ** e)}</text>`);
  }
  for (const b of sizes) {
    out.push(`<line x1="${X(b)}" x2="${X(b)}" y1="${y0 + T}" y2="${y0 + h - B}" stroke="#eee"/>`);
    out.push(`<text x="${X(b)}" y="${y0 + h - B + 14}" text-anchor="middle">${fmtBytes(b)}</text>`);
  }
  out.push(`<rect x="${x0 + L}" y="${y0 + T}" width="${w - L - R}" height="${h - T - B}" fill="none" stroke="#999"/>`);
  for (const impl of impls) {
    const line = sizes.map((b) => pts.find((p) => p.impl === impl && p.bytes === b)).filter(Boolean);
    if (!line.length) continue;
    const d = line.map((p, i) => `${i ? 'L' : 'M'}${X(p.bytes).toFixed(1)},${Y(p.median_us).toFixed(1)}`).join(' ');
    const wdt = BOLD.has(impl) ? 2.5 : 1.5;
    out.push(`<path d="${d}" fill="none" stroke="${COLORS[impl]}" stroke-width="${wdt}"/>`);
    for (const p of line) out.push(`<circle cx="${X(p.bytes).toFixed(1)}" cy="${Y(p.median_us).toFixed(1)}" r="2" fill="${COLORS[impl]}"/>`);
  }
  return out.join('\n');
}

/**
 * SVG text: rows = collectives, columns = world sizes, or the given columns
 * ({ title, match(median) -> boolean }) when there are any.
 */
export function latencySvg(medians, colls, nps, impls, columns = null) {
  columns ??= nps.map((np) => ({ title: `${np} ranks`, match: (m) => m.np === np }));
  const w = 420, h = 260, legendH = 44;
  const W = w * columns.length, H = h * colls.length + legendH;
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11">`,
    `<rect width="${W}" height="${H}" fill="white"/>`];
  colls.forEach((c, i) => columns.forEach((col, j) => parts.push(panel(medians, c, col, j * w, i * h, w, h, impls))));
  let x = 10;
  for (const impl of impls) {
    const y = H - 24;
    parts.push(`<line x1="${x}" x2="${x + 18}" y1="${y - 4}" y2="${y - 4}" stroke="${COLORS[impl]}" stroke-width="2.5"/>`);
    parts.push(`<text x="${x + 22}" y="${y}">${esc(LABELS[impl])}</text>`);
    x += 30 + LABELS[impl].length * 6.5;
  }
  parts.push('<text x="' + (W - 10) + '" y="' + (H - 6) + '" text-anchor="end" fill="#666">median µs per call, max over ranks; lower is better</text>');
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}
