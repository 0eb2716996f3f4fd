/**
 * The dependency rule (scripts/check-deps.mjs) holds for src/, and it would
 * catch the two ways it breaks: a cycle (type-only imports count) and an
 * import from a lower layer into a higher one.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script without type declarations
import { checkDependencies } from '../../scripts/check-deps.mjs';

const check = checkDependencies as (srcDir: string) => string[];

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

  it('names a folder the rule does not know', () => {
    const root = tree({ 'plugins/x.ts': 'export const x = 1;\n' });
    expect(check(root)).toEqual(["plugins/x.ts: folder 'plugins' has no place in LAYERS (scripts/check-deps.mjs)"]);
  });
});
