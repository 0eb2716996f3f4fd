#!/usr/bin/env node
/**
 * The dependency rule of src/, checked on every `npm test`:
 *
 *   1. No import cycles between modules (type-only imports count too: a
 *      cycle of types is still two files that cannot be understood apart).
 *   2. Folders import only the layers below them (LAYERS). core is the
 *      bottom: it imports nothing of ours but itself.
 *
 * It reads import specifiers with a regex rather than a TypeScript parser:
 * our sources only use `import ... from '...'`, `export ... from '...'` and
 * `import('...')`, and a plain script keeps the check free of dependencies.
 *
 *   node scripts/check-deps.mjs [srcDir]   exit 1 and one line per problem
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * What each folder (or top-level file) of src/ may import besides itself.
 * Read it bottom-up: core is pure rules; db stores them; maintenance runs
 * the reaper's services over the store; protocol is what a worker and an
 * operator may do, over the store, written once; api serves them;
 * the dashboard renders them; app wires both; runtimes and the CLI sit on top.
 * The worker SDK and the client are what users install next to their code,
 * so they see only core (the wire contract), never the server.
 */
export const LAYERS = {
  version: [],
  core: ['version'],
  client: ['core', 'version'],
  worker: ['core', 'version'],
  db: ['core', 'version'],
  maintenance: ['core', 'db', 'version'],
  protocol: ['core', 'db', 'version'],
  api: ['core', 'db', 'maintenance', 'protocol', 'version'],
  dashboard: ['core', 'db', 'maintenance', 'protocol', 'api', 'version'],
  app: ['core', 'db', 'maintenance', 'protocol', 'api', 'dashboard', 'version'],
  runtime: ['core', 'db', 'maintenance', 'protocol', 'api', 'dashboard', 'app', 'version'],
  embedded: ['core', 'db', 'maintenance', 'protocol', 'api', 'worker', 'runtime', 'app', 'version'],
  chaos: ['core', 'db', 'worker', 'client', 'version'],
  cli: ['core', 'db', 'maintenance', 'protocol', 'api', 'dashboard', 'app', 'runtime', 'embedded', 'worker', 'client', 'chaos', 'version'],
  index: ['core', 'db', 'maintenance', 'protocol', 'api', 'dashboard', 'app', 'runtime', 'embedded', 'worker', 'client', 'version'],
};

const IMPORT = /(?:^|[\s;])(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;

function sourceFiles(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...sourceFiles(full));
    else if (/\.tsx?$/.test(name) && !name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

/** The layer of a file: its first folder under src/, or its own name for top-level files. */
function layerOf(srcDir, file) {
  const [first, ...rest] = path.relative(srcDir, file).split(path.sep);
  return rest.length ? first : first.replace(/\.tsx?$/, '');
}

function localImports(file) {
  const text = readFileSync(file, 'utf8');
  const found = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (!spec.startsWith('.')) continue;
    found.push(path.resolve(path.dirname(file), spec));
  }
  return found;
}

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
function cycles(graph) {
  let index = 0;
  const stack = [];
  const info = new Map();
  const out = [];
  const visit = (v) => {
    info.set(v, { index, low: index, onStack: true });
    index++;
    stack.push(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!info.has(w)) {
        visit(w);
        info.get(v).low = Math.min(info.get(v).low, info.get(w).low);
      } else if (info.get(w).onStack) {
        info.get(v).low = Math.min(info.get(v).low, info.get(w).index);
      }
    }
    if (info.get(v).low === info.get(v).index) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        info.get(w).onStack = false;
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(component);
    }
  };
  for (const v of graph.keys()) if (!info.has(v)) visit(v);
  return out;
}

export function checkDependencies(srcDir) {
  const problems = [];
  const graph = new Map();
  for (const file of sourceFiles(srcDir)) graph.set(file, localImports(file));

  for (const [file, imports] of graph) {
    const from = layerOf(srcDir, file);
    const allowed = LAYERS[from];
    if (!allowed) {
      problems.push(`${path.relative(srcDir, file)}: folder '${from}' has no place in LAYERS (scripts/check-deps.mjs)`);
      continue;
    }
    for (const target of imports) {
      if (!graph.has(target)) continue; // not one of ours (or a missing file, which tsc reports)
      const to = layerOf(srcDir, target);
      if (to !== from && !allowed.includes(to)) {
        problems.push(`${path.relative(srcDir, file)} imports ${path.relative(srcDir, target)}: ${from} may not import ${to}`);
      }
    }
  }
  for (const component of cycles(graph)) {
    const names = component.map((f) => path.relative(srcDir, f)).sort();
    problems.push(`import cycle: ${names.join(' <-> ')}`);
  }
  return problems;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const srcDir = path.resolve(process.argv[2] ?? 'src');
  const problems = checkDependencies(srcDir);
  for (const p of problems) console.error(p);
  if (problems.length) {
    console.error(`dependency check: ${problems.length} problem(s); see the rule in scripts/check-deps.mjs`);
    process.exit(1);
  }
  console.log(`dependency check: ${sourceFiles(srcDir).length} files, no cycles, imports point down`);
}
