/**
 * The Bun entry, and the entry of the single binary (`npm run build:binary`,
 * see docs/deploy-bun.md).
 *
 * Run as the main module (`bun src/runtime/bun.ts [command]` or the binary),
 * it is the `leasehold` CLI: src/cli/main.ts with its imports of
 * ../runtime/node.ts redirected to bun-server.ts (Bun.serve, embedded
 * migrations) by a Bun plugin: registered below for `bun` runs, and in
 * scripts/build-binary.ts for the binary. Imported, it has the exports of
 * src/runtime/node.ts.
 */
export { openDatabase, serverLogger, startServer, summarize, type RunningServer, type ServeOptions } from './bun-server.ts';

interface BunPluginBuilder {
  onResolve(options: { filter: RegExp }, callback: (args: { path: string; importer: string }) => { path: string } | undefined): void;
}
declare const Bun: {
  plugin(plugin: { name: string; setup(build: BunPluginBuilder): void }): void;
};

/** Where the CLI's runtime imports go under Bun. */
export const BUN_RUNTIME = new URL('./bun-server.ts', import.meta.url).pathname;

/** Imports of src/runtime/node.ts from outside this folder (the CLI); they go to BUN_RUNTIME. */
export const NODE_RUNTIME_IMPORT = /(^|\/)\.\.\/runtime\/node\.ts$/;

if ((import.meta as ImportMeta & { main?: boolean }).main) {
  // In the binary the bundler already redirected the import; under `bun` this does.
  Bun.plugin({
    name: 'leasehold-bun-runtime',
    setup(build) {
      build.onResolve({ filter: NODE_RUNTIME_IMPORT }, () => ({ path: BUN_RUNTIME }));
    },
  });
  await import('../cli/main.ts');
}
