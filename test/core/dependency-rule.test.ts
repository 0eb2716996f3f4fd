/**
 * The dependency rule (scripts/check-deps.mjs) holds for src/, and it would
 * catch the ways it breaks: a cycle (type-only imports count), an import
 * from a lower layer into a higher one, a store function imported
 * around the store port, and a package the SDK or the client may not bring.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without type declarations
import { checkDependencies, checkTools } from '../../scripts/check-deps.mjs';

const check = checkDependencies as (srcDir: string) => string[];
const checkTool = checkTools as (toolsDir: string, srcDir: string) => string[];

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(tmpdir(), 'leasehold-deps-'));
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    writeFileSync(path.join(root, name), text);
  }
  return root;
}

describe('the dependency rule', () => {
  it('holds for src/', () => {
    expect(check(path.join(import.meta.dirname, '..', '..', 'src'))).toEqual([]);
  });

  it('finds a cycle made of type-only imports', () => {
    const root = tree({
      'core/a.ts': "import type { B } from './b.ts';\nexport type A = B;\n",
      'core/b.ts': "import type { A } from './a.ts';\nexport type B = { a?: A };\n",
    });
    expect(check(root)).toEqual(['import cycle: core/a.ts <-> core/b.ts']);
  });

  it('finds core importing the store, and the SDK importing the server', () => {
    const root = tree({
      'core/alerts.ts': "import type { M } from '../db/store/metrics.ts';\nexport type X = M;\n",
      'db/store/metrics.ts': 'export type M = number;\n',
      'worker/worker.ts': "export const load = () => import('../api/router.ts');\n",
      'api/router.ts': 'export const r = 1;\n',
    });
    expect(check(root).sort()).toEqual([
      'core/alerts.ts imports db/store/metrics.ts: core may not import db',
      'worker/worker.ts imports api/router.ts: worker may not import api',
    ]);
  });

  it('holds for tools/', () => {
    const root = path.join(import.meta.dirname, '..', '..');
    expect(checkTool(path.join(root, 'tools'), path.join(root, 'src'))).toEqual([]);
  });

  it('finds a package where it does not belong: a Node built-in in the SDK, Hono in the store; comments do not count', () => {
    const root = tree({
      'worker/files.ts': "import { readFileSync } from 'node:fs';\nexport const f = readFileSync;\n",
      'db/routes.ts': "import { Hono } from 'hono/tiny';\nexport const h = Hono;\n",
      'client/doc.ts': "/**\n * import { createClient } from 'leasehold/client';\n */\nexport const c = 1;\n",
    });
    expect(check(root).sort()).toEqual([
      'db/routes.ts imports package hono: db may not import it (PACKAGES in scripts/check-deps.mjs)',
      'worker/files.ts imports package node:fs: worker may not import it (PACKAGES in scripts/check-deps.mjs)',
    ]);
  });

  it('finds a tool reaching past its layers into the store', () => {
    const root = tree({
      'src/db/store/claim.ts': 'export const claim = 1;\n',
      'src/worker/index.ts': 'export const w = 1;\n',
      'tools/chaos/run.ts': "import { claim } from '../../src/db/store/claim.ts';\nimport { w } from '../../src/worker/index.ts';\nexport const x = [claim, w];\n",
    });
    expect(checkTool(path.join(root, 'tools'), path.join(root, 'src'))).toEqual(['tools/chaos/run.ts imports src/db/store/claim.ts: tool chaos may not import db']);
  });

  it('names a folder the rule does not know', () => {
    const root = tree({ 'plugins/x.ts': 'export const x = 1;\n' });
    expect(check(root)).toEqual(["plugins/x.ts: folder 'plugins' has no place in LAYERS (scripts/check-deps.mjs)"]);
  });

  describe('the store port', () => {
    const WHY =
      'outside src/db/store the store is reached through its port: types (and EnqueuePartlyStored) from db/store/port.ts, a store from createStore (db/store/create-store.ts)';
    /** A store file with a value and a type, the port (re-exporting the type), its factory, and `files` beside them. */
    const withStore = (files: Record<string, string>) =>
      tree({
        'db/store/read.ts': 'export type QueueHealth = { name: string };\nexport const queuesHealth = async (db: unknown) => [db];\n',
        'db/store/port.ts': "import type { QueueHealth } from './read.ts';\nexport type { QueueHealth } from './read.ts';\nexport interface JobStore { queuesHealth(): Promise<QueueHealth[]> }\n",
        'db/store/create-store.ts': "import type { JobStore } from './port.ts';\nimport { queuesHealth } from './read.ts';\nexport const createStore = (db: unknown): JobStore => ({ queuesHealth: () => queuesHealth(db) as never });\n",
        ...files,
      });

    it('fails a route, a maintenance service, a CLI command or the engine that imports a store function, naming the file', () => {
      const root = withStore({
        'api/admin-routes.ts': "import { queuesHealth } from '../db/store/read.ts';\nexport const r = queuesHealth;\n",
        'maintenance/prune.ts': "import { queuesHealth, type QueueHealth } from '../db/store/read.ts';\nexport const p = (q: QueueHealth) => [q, queuesHealth];\n",
        'cli/main.ts': "export const stats = async () => (await import('../db/store/read.ts')).queuesHealth;\n",
        'engine/worker-protocol.ts': "export { queuesHealth } from '../db/store/read.ts';\n",
      });
      expect(check(root).sort()).toEqual([
        `api/admin-routes.ts imports db/store/read.ts: ${WHY}`,
        `cli/main.ts imports db/store/read.ts: ${WHY}`,
        `engine/worker-protocol.ts imports db/store/read.ts: ${WHY}`,
        `maintenance/prune.ts imports db/store/read.ts: ${WHY}`,
      ]);
    });

    it('fails a store type imported from its store file instead of the port, anywhere outside src/db/store', () => {
      const root = withStore({
        'api/queue-view.ts': "import type { QueueHealth } from '../db/store/read.ts';\nexport type V = QueueHealth;\n",
        'dashboard/queue-page.tsx': "export type { QueueHealth } from '../db/store/read.ts';\n",
        'db/other.ts': "import type { QueueHealth } from './store/read.ts';\nexport type O = QueueHealth;\n",
        'runtime/node.ts': "import { queuesHealth } from '../db/store/read.ts';\nexport const n = queuesHealth;\n",
      });
      expect(check(root).sort()).toEqual([
        `api/queue-view.ts imports db/store/read.ts: ${WHY}`,
        `dashboard/queue-page.tsx imports db/store/read.ts: ${WHY}`,
        `db/other.ts imports db/store/read.ts: ${WHY}`,
        `runtime/node.ts imports db/store/read.ts: ${WHY}`,
      ]);
    });

    it('allows the port (its types and its error), createStore, and the store files among themselves', () => {
      const root = withStore({
        'api/admin-routes.ts': "import type { JobStore, QueueHealth } from '../db/store/port.ts';\nexport type V = [QueueHealth, JobStore];\n",
        'cli/main.ts': "export const stats = async (db: unknown) => (await import('../db/store/create-store.ts')).createStore(db).queuesHealth();\n",
        'db/store/other.ts': "import { queuesHealth } from './read.ts';\nexport const o = queuesHealth;\n",
        'runtime/node.ts': "import { createStore } from '../db/store/create-store.ts';\nexport const n = createStore;\n",
      });
      expect(check(root)).toEqual([]);
    });
  });
});
