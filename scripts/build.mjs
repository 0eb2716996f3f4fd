#!/usr/bin/env node
// `npm run build` (and prepack): src/ -> dist/ as ESM JavaScript with .d.ts.
// tsc rewrites `./x.ts` to `./x.js` in the JavaScript it emits
// (rewriteRelativeImportExtensions) but leaves the declarations' imports as
// written, which a `module: nodenext` consumer cannot follow: rewrite those
// here. Plain Node, no dependencies beyond typescript.
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(ROOT, 'dist');

// Only what an earlier build wrote: dist/leasehold (the Bun binary, npm run
// build:binary) stays, and the files list keeps it out of the tarball.
for (const name of existsSync(DIST) ? readdirSync(DIST) : []) {
  const path = join(DIST, name);
  if (statSync(path).isDirectory() || /\.(js|d\.ts)$/.test(name)) rmSync(path, { recursive: true, force: true });
}
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json')], { stdio: ['ignore', 'inherit', 'inherit'] });

const RELATIVE_TS = /((?:from|import)\s*\(?\s*['"])(\.{1,2}\/[^'"]*?)\.tsx?(['"])/g;
function walk(dir) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name.endsWith('.d.ts')) {
      const text = readFileSync(path, 'utf8');
      const fixed = text.replace(RELATIVE_TS, '$1$2.js$3');
      if (fixed !== text) writeFileSync(path, fixed);
    }
  }
}
walk(DIST);
chmodSync(join(DIST, 'cli', 'main.js'), 0o755);
console.error('leasehold: built dist/');
