#!/usr/bin/env node
// gemini-mcp-server's launcher: it finds the binary of this platform's
// package (an optional dependency, installed by npm only where its os and
// cpu fit) and runs it with this process's arguments, standard streams
// and environment; a signal this process gets is passed on, and the
// binary's end is this process's: its exit code, or its signal raised
// again. Nothing is downloaded and nothing runs at install time.
'use strict';

const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

// The binary of platform (npm's os-cpu) is in the package
// @gemini-mcp-server/<platform>, one of this package's optional
// dependencies (scripts/npmpack lists the release's platforms there).
const SCOPE = '@gemini-mcp-server/';
const optional = require('../package.json').optionalDependencies || {};
const platform = `${process.platform}-${process.arch}`;
const pkg = SCOPE + platform;
if (!Object.prototype.hasOwnProperty.call(optional, pkg)) {
  const known = Object.keys(optional).map((p) => p.slice(SCOPE.length)).join(', ');
  process.stderr.write(`gemini-mcp-server: no binary is published for this platform (${platform}); there is one for ${known}. ` +
    'Release archives and building from source: https://github.com/gemini-mcp-server/gemini-mcp-server\n');
  process.exit(1);
}

// The platform package is looked for in this launcher's own install only,
// as npm lays it out: nested in the launcher's node_modules (where npm puts
// a dependency it cannot hoist, and a global install's), else beside the
// launcher in the node_modules that holds it (a local install's, npx's
// cache, pnpm's store). Never further up: a node_modules in an ancestor
// directory (a shared /tmp) is not this install's, and its package is not
// run. It must be this launcher's version, as npm installs it.
const root = path.dirname(__dirname);
const own = require('../package.json').version;
const candidates = [path.join(root, 'node_modules', pkg)];
if (path.basename(path.dirname(root)) === 'node_modules') {
  candidates.push(path.join(path.dirname(root), pkg));
}

// find returns the package's directory and package.json, or undefined.
function find() {
  if (process.versions.pnp) {
    // Yarn Plug'n'Play resolves only the launcher's declared
    // dependencies, never an ancestor's node_modules.
    try {
      const file = require.resolve(`${pkg}/package.json`);
      return { dir: path.dirname(file), file };
    } catch (err) {
      return undefined;
    }
  }
  for (const dir of candidates) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file)) {
      return { dir, file };
    }
  }
  return undefined;
}

const found = find();
if (found === undefined) {
  process.stderr.write(`gemini-mcp-server: the binary for this platform (${platform}) is in the package ${pkg}, which is not installed ` +
    `(looked for in ${candidates.join(' and ')}). ` +
    'npm installs it as an optional dependency of gemini-mcp-server: install again without --omit=optional or --no-optional ' +
    `(and without a lockfile made on another platform), or install ${pkg}@${own} beside gemini-mcp-server.\n`);
  process.exit(1);
}
let meta;
try {
  meta = JSON.parse(fs.readFileSync(found.file, 'utf8'));
} catch (err) {
  process.stderr.write(`gemini-mcp-server: cannot read ${found.file}: ${err.message}\n`);
  process.exit(1);
}
if (meta === null || typeof meta !== 'object' || meta.name !== pkg || meta.version !== own) {
  const what = meta !== null && typeof meta === 'object' ? `${meta.name}@${meta.version}` : 'not a package';
  process.stderr.write(`gemini-mcp-server: ${found.dir} holds ${what}, not ${pkg}@${own}, the version of this launcher: ` +
    `it is not run. Install gemini-mcp-server again, so that npm installs ${pkg}@${own} with it.\n`);
  process.exit(1);
}
const bin = path.join(found.dir, 'bin', process.platform === 'win32' ? 'gemini-mcp-server.exe' : 'gemini-mcp-server');

const child = spawn(bin, process.argv.slice(2), { stdio: 'inherit', windowsHide: true });

const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'].filter(
  (s) => process.platform !== 'win32' || s === 'SIGINT' || s === 'SIGTERM');
const forward = (signal) => {
  if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    child.kill(signal);
  }
};
for (const s of forwarded) {
  process.on(s, forward);
}

child.on('error', (err) => {
  process.stderr.write(`gemini-mcp-server: cannot run ${bin}: ${err.message}\n`);
  process.exit(1);
});

child.on('exit', (code, signal) => {
  if (signal) {
    // Die of the same signal, as a shell would see the binary die; should
    // it not end this process (an ignored one), exit as a shell reports it.
    for (const s of forwarded) {
      process.removeListener(s, forward);
    }
    setTimeout(() => process.exit(128 + (os.constants.signals[signal] || 0)), 1000);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code === null ? 1 : code);
});
