#!/usr/bin/env node
// compile.js compiles Solidity sources with the solc pinned in package.json
// through solc's standard-JSON interface and writes, for each contract,
// <out>/<Name>.abi (pretty JSON) and <out>/<Name>.bin (hex, no 0x, no newline).
// Contracts without bytecode (interfaces, abstract contracts) get only an .abi.
//
// Usage: node compile.js [--out DIR] [--evm-version V] file.sol ...
//
// Source unit names are the files' base names, so the output (including the
// metadata hash appended to the bytecode) does not depend on where the
// checkout lives. Imports resolve relative to the importing file's directory.
'use strict';

const fs = require('fs');
const path = require('path');
const solc = require('solc');

const PINNED = require('./package.json').dependencies.solc;

function usage(msg) {
  if (msg) process.stderr.write(`compile.js: ${msg}\n`);
  process.stderr.write('usage: node compile.js [--out DIR] [--evm-version V] file.sol ...\n');
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { out: 'build', evmVersion: 'cancun', files: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--out' || a === '--evm-version') {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      if (a === '--out') opts.out = argv[++i];
      else opts.evmVersion = argv[++i];
    } else if (a.startsWith('--')) {
      usage(`unknown flag ${a}`);
    } else {
      opts.files.push(a);
    }
  }
  if (opts.files.length === 0) usage('no source files');
  return opts;
}

function main() {
  const opts = parseArgs(process.argv.slice(2));

  // solc.version() is like "0.8.37+commit.xxxxxxxx.Emscripten.clang".
  const version = solc.version();
  if (!version.startsWith(PINNED + '+')) {
    process.stderr.write(`compile.js: node_modules has solc ${version}, package.json pins ${PINNED}: run npm ci\n`);
    process.exit(1);
  }

  const sources = {};
  const unitDir = {};
  for (const f of opts.files) {
    const unit = path.basename(f);
    if (sources[unit]) {
      process.stderr.write(`compile.js: two sources named ${unit}\n`);
      process.exit(2);
    }
    sources[unit] = { content: fs.readFileSync(f, 'utf8') };
    unitDir[unit] = path.dirname(path.resolve(f));
  }
  const baseDirs = [...new Set(Object.values(unitDir))];

  const input = {
    language: 'Solidity',
    sources,
    settings: {
      evmVersion: opts.evmVersion,
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object'] } },
    },
  };

  // Import callback: resolve a unit name against the directories of the given sources.
  function findImports(name) {
    for (const dir of baseDirs) {
      const p = path.join(dir, name);
      if (fs.existsSync(p)) return { contents: fs.readFileSync(p, 'utf8') };
    }
    return { error: `import ${name} not found` };
  }

  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }));

  const errors = (output.errors || []).filter((e) => e.severity === 'error');
  for (const e of output.errors || []) {
    process.stderr.write((e.formattedMessage || e.message) + '\n');
  }
  if (errors.length > 0) {
    process.stderr.write(`compile.js: ${errors.length} error(s)\n`);
    process.exit(1);
  }

  fs.mkdirSync(opts.out, { recursive: true });
  const seen = new Set();
  for (const unit of Object.keys(output.contracts || {}).sort()) {
    if (!sources[unit]) continue; // imported dependency: its contracts belong to another build
    const contracts = output.contracts[unit];
    for (const name of Object.keys(contracts).sort()) {
      if (seen.has(name)) {
        process.stderr.write(`compile.js: two contracts named ${name}\n`);
        process.exit(1);
      }
      seen.add(name);
      const c = contracts[name];
      fs.writeFileSync(path.join(opts.out, `${name}.abi`), JSON.stringify(c.abi, null, 2) + '\n');
      const bin = c.evm.bytecode.object;
      if (bin.length > 0) fs.writeFileSync(path.join(opts.out, `${name}.bin`), bin);
    }
  }
}

main();
