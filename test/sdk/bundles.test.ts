/**
 * leasehold/worker, leasehold/client and leasehold/fencing carry no server code: bundled for a
 * neutral platform (no Node built-ins assumed), neither reaches Drizzle,
 * libSQL, Hono, the store, the API, the dashboard or a runtime entry.
 */
import { build } from 'esbuild';
import { join } from 'node:path';
import { expect, test } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
// Our own files are named from the project root (src/...); a package's own src/ folder
// (@opentelemetry/api/build/src/api/) is not ours.
const SERVER_CODE = /(^|\/)node_modules\/(drizzle-orm|@libsql|libsql|hono|@hono)\/|^src\/(db|api|dashboard|runtime|maintenance|embedded|cli|chaos)\/|^src\/app\.ts$/;

test.each(['src/worker/index.ts', 'src/client/index.ts', 'src/fencing/index.ts'])('%s bundles for a neutral platform without server code', async (entry) => {
  const result = await build({ entryPoints: [join(ROOT, entry)], bundle: true, platform: 'neutral', format: 'esm', write: false, metafile: true, logLevel: 'silent' });
  const inputs = Object.keys(result.metafile.inputs);
  expect(inputs.length).toBeGreaterThan(1);
  expect(inputs.filter((path) => SERVER_CODE.test(path))).toEqual([]);
  // Nothing the bundler had to leave as an import (a Node built-in, a package).
  expect(result.metafile.outputs[Object.keys(result.metafile.outputs)[0]!]!.imports).toEqual([]);
});
