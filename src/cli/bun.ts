/**
 * The `leasehold` CLI under Bun, and the entry of the single binary
 * (`npm run build:binary`, see docs/deploy-bun.md): `bun src/cli/bun.ts [command]`.
 *
 * It is src/cli/main.ts with its imports of ../runtime/node.ts redirected to
 * the Bun server (Bun.serve, embedded migrations) by a Bun plugin: registered
 * here for `bun` runs, and in scripts/build-binary.ts when the binary is built.
 */
import { BUN_RUNTIME, NODE_RUNTIME_IMPORT } from '../runtime/bun.ts';

interface BunPluginBuilder {
  onResolve(options: { filter: RegExp }, callback: (args: { path: string; importer: string }) => { path: string } | undefined): void;
}
declare const Bun: {
  plugin(plugin: { name: string; setup(build: BunPluginBuilder): void }): void;
};

// In the binary the bundler already redirected the import; under `bun` this does.
Bun.plugin({
  name: 'leasehold-bun-runtime',
  setup(build) {
    build.onResolve({ filter: NODE_RUNTIME_IMPORT }, () => ({ path: BUN_RUNTIME }));
  },
});
await import('./main.ts');
