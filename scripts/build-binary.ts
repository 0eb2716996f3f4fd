/**
 * `npm run build:binary`: one executable, dist/leasehold, from src/cli/bun.ts
 * via `bun build --compile` (Bun.build with `compile`). It carries the Bun
 * runtime, the code, the migrations and public/ (Bun macros in
 * src/runtime/embedded-migrations.ts) and libSQL's native addon.
 *
 * Two build plugins:
 * - libSQL's `libsql` package picks its native addon at run time with
 *   require(`@libsql/${target}`), which the bundler cannot follow, so the
 *   binary would look for node_modules at run time. The plugin rewrites that
 *   line into a static require of this machine's addon
 *   (`@libsql/linux-x64-gnu/index.node`), which the compiler embeds.
 * - The CLI (src/cli/*.ts) imports ../runtime/node.ts; in the binary those
 *   imports go to src/runtime/bun-server.ts (Bun.serve, embedded migrations).
 *
 * Usage: bun scripts/build-binary.ts [--outfile PATH]
 */
import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { NODE_RUNTIME_IMPORT } from '../src/runtime/bun.ts';

const ROOT = resolve(import.meta.dir, '..');
const argOut = process.argv.indexOf('--outfile');
const OUTFILE = resolve(argOut === -1 ? join(ROOT, 'dist', 'leasehold') : process.argv[argOut + 1]!);

/** The @libsql/<target> package for this machine, and Bun's compile target for it. */
function nativeTarget(): { libsql: string; bun: string } {
  const require = createRequire(join(ROOT, 'node_modules', 'libsql', 'index.js'));
  const { familySync, MUSL } = require('detect-libc') as { familySync(): string | null; MUSL: string };
  const libc = process.platform === 'linux' ? (familySync() === MUSL ? 'musl' : 'gnu') : '';
  const libsql = `${process.platform}-${process.arch}${libc ? `-${libc}` : ''}`;
  const supported: Record<string, string> = {
    'linux-x64-gnu': 'bun-linux-x64',
    'linux-arm64-gnu': 'bun-linux-arm64',
    'linux-x64-musl': 'bun-linux-x64-musl',
    'linux-arm64-musl': 'bun-linux-arm64-musl',
    'darwin-x64': 'bun-darwin-x64',
    'darwin-arm64': 'bun-darwin-arm64',
  };
  const bun = supported[libsql];
  if (!bun) throw new Error(`build-binary: no libSQL addon mapping for ${libsql}`);
  // Fail here, not at the binary's first start, when the addon is not installed.
  require.resolve(`@libsql/${libsql}/index.node`);
  return { libsql, bun };
}

const target = nativeTarget();
const DYNAMIC_REQUIRE = 'return require(`@libsql/${target}`);';

const plugin: import('bun').BunPlugin = {
  name: 'leasehold-binary',
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]libsql[\\/]index\.js$/ }, async ({ path }) => {
      const source = await Bun.file(path).text();
      if (!source.includes(DYNAMIC_REQUIRE)) throw new Error(`build-binary: ${path} no longer contains ${DYNAMIC_REQUIRE}; update the plugin`);
      return { contents: source.replace(DYNAMIC_REQUIRE, `return require(${JSON.stringify(`@libsql/${target.libsql}/index.node`)});`), loader: 'js' };
    });
    build.onResolve({ filter: NODE_RUNTIME_IMPORT }, ({ importer }) =>
      importer.includes(`${'/src/'}cli/`) ? { path: join(ROOT, 'src', 'runtime', 'bun-server.ts') } : undefined,
    );
  },
};

const started = performance.now();
mkdirSync(dirname(OUTFILE), { recursive: true });
const result = await Bun.build({
  entrypoints: [join(ROOT, 'src', 'cli', 'bun.ts')],
  compile: { target: target.bun as 'bun-linux-x64', outfile: OUTFILE },
  plugins: [plugin],
  minify: { whitespace: true, syntax: true },
  sourcemap: 'none',
});
if (!result.success) {
  for (const log of result.logs) console.error(log);
  process.exit(1);
}
chmodSync(OUTFILE, 0o755);
const mb = (statSync(OUTFILE).size / 1024 / 1024).toFixed(1);
console.log(`build-binary: ${OUTFILE} (${mb} MiB, ${target.bun}, libSQL addon @libsql/${target.libsql}) in ${((performance.now() - started) / 1000).toFixed(1)} s`);
