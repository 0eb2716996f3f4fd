#!/usr/bin/env node
/**
 * The dependency rule of src/, checked on every `npm test`:
 *
 *   1. No import cycles between modules (type-only imports count too: a
 *      cycle of types is still two files that cannot be understood apart).
 *   2. Folders import only the layers below them (LAYERS). core is the
 *      bottom: it imports nothing of ours but itself.
 *   3. Outside src/db/store the store is reached through its port
 *      (STORE_PORT): an import of db/store/*, of a value or a type alike,
 *      names port.ts (the interface and every type it takes and gives) or
 *      a factory (create-store.ts, create-dashboard-store.ts); nothing else.
 *   4. Packages too (PACKAGES): each folder names the npm packages and Node
 *      built-ins it may import, so SQL clients stay in the runtimes, Hono in
 *      the HTTP layers, and the SDK and client stay free of Node built-ins.
 *   5. Development tools under tools/ (TOOLS) may use the product only
 *      through the layers they name, and only the packages they name.
 *
 * It reads import specifiers with a regex rather than a TypeScript parser:
 * our sources only use `import ... from '...'`, `export ... from '...'` and
 * `import('...')`, and a plain script keeps the check free of dependencies.
 *
 *   node scripts/check-deps.mjs [srcDir] [toolsDir]   exit 1 and one line per problem
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * What each folder (or top-level file) of src/ may import besides itself.
 * Read it bottom-up: core is pure rules; db stores them; maintenance runs
 * the reaper's services over the store; engine is what leasehold does over
 * the store, written once (a worker's and an operator's writes, enqueue,
 * the waits and their wake-ups); api serves it over HTTP and the embedded
 * API in process; the dashboard renders it; app wires both; runtimes and
 * the CLI sit on top, each building one engine.
 * The worker SDK and the client are what users install next to their code,
 * so they see only core (the wire contract) and http (how they send a
 * request), never the server. fencing is what users put in their own
 * downstream stores and services: it stands alone.
 */
export const LAYERS = {
  version: [],
  core: ['version'],
  http: [],
  fencing: [],
  client: ['core', 'http', 'version'],
  worker: ['core', 'http', 'version'],
  db: ['core', 'version'],
  maintenance: ['core', 'db', 'version'],
  engine: ['core', 'db', 'maintenance', 'version'],
  api: ['core', 'db', 'maintenance', 'engine', 'version'],
  dashboard: ['core', 'db', 'maintenance', 'engine', 'api', 'version'],
  app: ['core', 'db', 'maintenance', 'engine', 'api', 'dashboard', 'version'],
  runtime: ['core', 'db', 'maintenance', 'engine', 'api', 'dashboard', 'app', 'version'],
  embedded: ['core', 'db', 'maintenance', 'engine', 'api', 'worker', 'runtime', 'app', 'version'],
  cli: ['core', 'db', 'maintenance', 'engine', 'api', 'dashboard', 'app', 'runtime', 'embedded', 'worker', 'client', 'version'],
  index: ['core', 'db', 'maintenance', 'engine', 'api', 'dashboard', 'app', 'runtime', 'embedded', 'worker', 'client', 'version'],
};

/**
 * The npm packages (by name, without subpath) and Node built-ins ('node:*')
 * each folder may import. `@opentelemetry/api` is the one tracing
 * dependency: a no-op until the application registers a provider.
 */
export const PACKAGES = {
  version: [],
  core: ['croner', '@opentelemetry/api'],
  http: ['node:*'],
  fencing: [],
  client: ['@opentelemetry/api'],
  worker: ['@opentelemetry/api'],
  db: ['drizzle-orm'],
  maintenance: [],
  engine: [],
  api: ['hono', '@opentelemetry/api'],
  dashboard: ['hono'],
  app: ['hono', '@opentelemetry/api'],
  runtime: ['hono', '@hono/node-server', '@libsql/client', 'drizzle-orm', 'libsql', 'node:*'],
  embedded: ['@opentelemetry/api'],
  cli: ['node:*'],
  index: [],
};

/**
 * Development tools (tools/<name>/): the layers of src/ each may import,
 * and its packages. They are not part of the package.
 */
export const TOOLS = {
  chaos: { layers: ['core', 'worker', 'client', 'version'], packages: ['@libsql/client', 'node:*'] },
};

/**
 * The store port rule: routes, the CLI, maintenance and the engine call a
 * `JobStore` (src/db/store/port.ts), never a store function with a database
 * handle, and name the store's types as the port does, so SQL, the database
 * handle and the store's file layout stay inside src/db/store.
 *
 * `entrances`: the only db/store files anything outside src/db/store may
 * import, values or types: the port (with the types beside it, re-exported,
 * and the error a bulk insert throws) and the factories that build one over
 * a database. The runtimes, app.ts and the embedded library are where a
 * database becomes a store: they too import only createStore.
 */
export const STORE_PORT = {
  entrances: ['db/store/port.ts', 'db/store/create-store.ts', 'db/store/create-dashboard-store.ts'],
};

/** Group 1: `type ` of an `import type` / `export type`; 2-4: the specifier. */
const IMPORT = /(?:^|[\s;])(?:import|export)\s+(type\s+)?[^'"`;]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;

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

/**
 * Our imports of a file: the resolved path, and whether only types are
 * imported. With verbatimModuleSyntax `import { type A }` still loads the
 * module, so only `import type` and `export type` count as type-only.
 */
function localImports(file) {
  const text = readFileSync(file, 'utf8');
  const found = [];
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[2] ?? m[3] ?? m[4];
    if (!spec.startsWith('.')) continue;
    found.push({ target: path.resolve(path.dirname(file), spec), typeOnly: m[1] !== undefined });
  }
  return found;
}

/** The packages a file imports (bare specifiers, comments left out), by package name: `@scope/name`, `name` or `node:x`. */
function packageImports(file) {
  const text = readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const names = new Set();
  for (const m of text.matchAll(IMPORT)) {
    const spec = m[2] ?? m[3] ?? m[4];
    if (spec.startsWith('.')) continue;
    names.add(spec.startsWith('node:') ? spec : spec.split('/').slice(0, spec.startsWith('@') ? 2 : 1).join('/'));
  }
  return [...names];
}

const packageAllowed = (allowed, name) => allowed.includes(name) || (name.startsWith('node:') && allowed.includes('node:*'));

/** Problems with rule 4 for one file: `where` names it, `layer` is its folder's entry. */
function packageProblems(where, layer, allowed, file) {
  return packageImports(file)
    .filter((name) => !packageAllowed(allowed, name))
    .map((name) => `${where} imports package ${name}: ${layer} may not import it (PACKAGES in scripts/check-deps.mjs)`);
}

/** Problems with rule 3 for one file's imports (paths relative to srcDir, with / separators). */
function storePortProblems(from, imports) {
  if (from.startsWith('db/store/')) return [];
  // A layer that may not import db at all gets rule 2's problem alone.
  const layer = from.includes('/') ? from.split('/')[0] : from.replace(/\.tsx?$/, '');
  if (layer !== 'db' && !(LAYERS[layer] ?? []).includes('db')) return [];
  return imports
    .filter(({ to }) => to.startsWith('db/store/') && !STORE_PORT.entrances.includes(to))
    .map(({ to }) => `${from} imports ${to}: outside src/db/store the store is reached through its port: types (and EnqueuePartlyStored) from db/store/port.ts, a store from createStore (db/store/create-store.ts)`);
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

export function checkDependencies(dir) {
  // Absolute, so a file's key and the targets resolved from its imports match.
  const srcDir = path.resolve(dir);
  const problems = [];
  const graph = new Map();
  const importsOf = new Map();
  for (const file of sourceFiles(srcDir)) {
    importsOf.set(file, localImports(file));
    graph.set(file, importsOf.get(file).map((i) => i.target));
  }
  const rel = (file) => path.relative(srcDir, file).split(path.sep).join('/');

  for (const [file, imports] of graph) {
    const from = layerOf(srcDir, file);
    const allowed = LAYERS[from];
    if (!allowed) {
      problems.push(`${path.relative(srcDir, file)}: folder '${from}' has no place in LAYERS (scripts/check-deps.mjs)`);
      continue;
    }
    problems.push(...packageProblems(path.relative(srcDir, file), from, PACKAGES[from] ?? [], file));
    for (const target of imports) {
      if (!graph.has(target)) continue; // not one of ours (or a missing file, which tsc reports)
      const to = layerOf(srcDir, target);
      if (to !== from && !allowed.includes(to)) {
        problems.push(`${path.relative(srcDir, file)} imports ${path.relative(srcDir, target)}: ${from} may not import ${to}`);
      }
    }
  }
  for (const [file, imports] of importsOf) {
    problems.push(...storePortProblems(rel(file), imports.filter((i) => graph.has(i.target)).map((i) => ({ to: rel(i.target), typeOnly: i.typeOnly }))));
  }
  for (const component of cycles(graph)) {
    const names = component.map((f) => path.relative(srcDir, f)).sort();
    problems.push(`import cycle: ${names.join(' <-> ')}`);
  }
  return problems;
}

/** Rule 5: each tools/<name>/ file imports src/ only through its tool's layers, and only its tool's packages. */
export function checkTools(toolsDir, srcDir) {
  const root = path.resolve(toolsDir);
  const src = path.resolve(srcDir);
  const problems = [];
  for (const file of sourceFiles(root)) {
    const where = path.join('tools', path.relative(root, file));
    const tool = path.relative(root, file).split(path.sep)[0];
    const rule = TOOLS[tool];
    if (!rule) {
      problems.push(`${where}: tool '${tool}' has no place in TOOLS (scripts/check-deps.mjs)`);
      continue;
    }
    problems.push(...packageProblems(where, `tool ${tool}`, rule.packages, file));
    for (const { target } of localImports(file)) {
      if (!target.startsWith(src + path.sep)) continue;
      const to = layerOf(src, target);
      if (!rule.layers.includes(to)) problems.push(`${where} imports ${path.relative(path.dirname(src), target)}: tool ${tool} may not import ${to}`);
    }
  }
  return problems;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const srcDir = path.resolve(process.argv[2] ?? 'src');
  const toolsDir = path.resolve(process.argv[3] ?? 'tools');
  const problems = [...checkDependencies(srcDir), ...checkTools(toolsDir, srcDir)];
  for (const p of problems) console.error(p);
  if (problems.length) {
    console.error(`dependency check: ${problems.length} problem(s); see the rule in scripts/check-deps.mjs`);
    process.exit(1);
  }
  console.log(`dependency check: ${sourceFiles(srcDir).length} files, no cycles, imports point down, the store through its port, packages where they belong`);
}
