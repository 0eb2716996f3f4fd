/**
 * The client's types refuse wrong payloads and keep each queue's result
 * type: test/sdk/fixtures/client-types.ts is compiled by tsc on its own,
 * and every `@ts-expect-error` in it must be needed (an unused one is an
 * error), while the correct calls around them compile.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { expect, test } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

test('tsc --noEmit accepts the typed calls and refuses every wrong one it is told to expect', () => {
  const config = join(ROOT, 'test/sdk/fixtures/tsconfig.client-types.json');
  let output = '';
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '--noEmit', '-p', config], { encoding: 'utf8', stdio: 'pipe' });
  } catch (err) {
    output = `${(err as { stdout?: string }).stdout ?? ''}${(err as { stderr?: string }).stderr ?? ''}`;
  }
  expect(output).toBe('');
}, 120_000);
