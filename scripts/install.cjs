#!/usr/bin/env node
// npm's install step (package.json "install"): use the prebuilt addon when
// one loads here (node-gyp-build looks in build/Release, then in
// prebuilds/<platform>-<arch>/); otherwise build it from source with
// node-gyp, and when the tools for that are missing say so in one message
// instead of node-gyp's page of errors.
'use strict';
const { spawnSync } = require('node:child_process');
const { existsSync, readdirSync } = require('node:fs');
const { join } = require('node:path');

const root = join(__dirname, '..');
const say = (text) => console.error(`nodempi: ${text}`);

/** What prebuilds the package has, e.g. "linux-x64, linux-arm64 (glibc >= 2.28)". */
function shipped() {
  const dir = join(root, 'prebuilds');
  const targets = existsSync(dir) ? readdirSync(dir).sort() : [];
  return targets.length ? `${targets.join(', ')} (glibc >= 2.28)` : 'none';
}

function runs(cmd) {
  return spawnSync(cmd, ['--version'], { stdio: 'ignore', shell: false }).status === 0;
}

let why = 'a build from source was asked for (--build-from-source)';
if (process.env.npm_config_build_from_source !== 'true') {
  try {
    require('node-gyp-build')(root);
    process.exit(0);
  } catch (err) {
    why = String(err && err.message ? err.message : err).split('\n')[0];
  }
}

const libc = process.env.LIBC || (existsSync('/etc/alpine-release') ? 'musl' : 'glibc');
const here = `${process.platform}-${process.arch} (${libc}), Node ${process.versions.node}`;
// What node-gyp's Makefile build runs: $CXX (make's default g++), make, Python 3.
const cxx = process.env.CXX || 'g++';
const make = process.env.MAKE || 'make';
const python = process.env.npm_config_python || process.env.PYTHON || (runs('python3') ? 'python3' : 'python');
const missing = [[cxx, 'a C++17 compiler'], [make, 'make'], [python, 'Python 3']]
  .filter(([cmd]) => !runs(cmd)).map(([cmd, what]) => `${what} (\`${cmd} --version\` failed)`);
if (missing.length) {
  say(`no prebuilt addon loads on ${here}: ${why}.\n` +
    `  This package has prebuilt addons for: ${shipped()}.\n` +
    `  Building it from source needs what is missing here: ${missing.join(', ')}.\n` +
    '  Install them (Debian/Ubuntu: apt-get install g++ make python3; RHEL: dnf install gcc-c++ make python3;\n' +
    '  Alpine: apk add g++ make python3 linux-headers) and install nodempi again.');
  process.exit(1);
}

say(`no prebuilt addon loads on ${here} (${why}); building it from source with node-gyp`);
// npm names its own node-gyp in the environment of install scripts; outside
// npm, an installed node-gyp package or the command on PATH.
let gyp = process.env.npm_config_node_gyp;
if (!gyp || !existsSync(gyp)) {
  try {
    gyp = require.resolve('node-gyp/bin/node-gyp.js', { paths: [root] });
  } catch {
    gyp = undefined;
  }
}
const r = gyp
  ? spawnSync(process.execPath, [gyp, 'rebuild'], { cwd: root, stdio: 'inherit' })
  : spawnSync('node-gyp', ['rebuild'], { cwd: root, stdio: 'inherit' });
if (r.status !== 0) {
  say(`the build from source failed (node-gyp's output is above${r.error ? `; ${r.error.message}` : ''}). ` +
    'It needs a C++17 compiler, make and Python 3.');
  process.exit(r.status || 1);
}
