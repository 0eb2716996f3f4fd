#!/usr/bin/env node
// src/ -> dist/ as ESM JavaScript with .d.ts: `npm run build`, prepack (before
// `npm pack` and `npm publish`) and preprepare, which npm runs after `npm ci` /
// `npm install` in a clone (the bin and the package's own entry points are in
// dist/) and in the clone it makes to install leasehold from a git URL.
// preprepare rather than prepare: npm 11 lists a tarball's or git package's
// `prepare` among the install scripts a project must approve (and
// --strict-allow-scripts refuses it), although it never runs it for a tarball.
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

let tsc;
try {
  tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
} catch (err) {
  // `npm ci --omit=dev` in a clone has no typescript: failing here would fail
  // the whole install, so say what is missing and what it costs. A pack or a
  // publish without it must fail: its tarball would have no dist/.
  if (!['install', 'ci'].includes(process.env.npm_command ?? '')) throw err;
  console.error('leasehold: typescript is not installed (dev dependencies omitted), so dist/ was not built: the leasehold bin and the package entry points need it (npm install, then npm run build)');
  process.exit(0);
}
// Only what an earlier build wrote: dist/leasehold (the Bun binary, npm run
// build:binary) stays, and the files list keeps it out of the tarball.
for (const name of existsSync(DIST) ? readdirSync(DIST) : []) {
  const path = join(DIST, name);
  if (statSync(path).isDirectory() || /\.(js|d\.ts)$/.test(name)) rmSync(path, { recursive: true, force: true });
}
// The emitted files do not depend on type checking, and `npm test` type-checks
// (tsc --noEmit): skipping the check here makes the build a third as long,
// which every `npm ci` pays.
execFileSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--noCheck'], { stdio: ['ignore', 'inherit', 'inherit'] });

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
