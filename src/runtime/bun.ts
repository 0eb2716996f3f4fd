/**
 * The Bun runtime: the exports of src/runtime/node.ts, served by Bun.serve
 * with embedded migrations (bun-server.ts), and where the CLI's imports of
 * ../runtime/node.ts are redirected under Bun. The CLI's Bun entry, which is
 * also the single binary's, is src/cli/bun.ts (see docs/deploy-bun.md).
 */
export { openDatabase, serverLogger, startServer, summarize, type RunningServer, type ServeOptions } from './bun-server.ts';

/** Where the CLI's runtime imports go under Bun. */
export const BUN_RUNTIME = new URL('./bun-server.ts', import.meta.url).pathname;

/** Imports of src/runtime/node.ts from outside this folder (the CLI); they go to BUN_RUNTIME. */
export const NODE_RUNTIME_IMPORT = /(^|\/)\.\.\/runtime\/node\.ts$/;
