/**
 * docs/configuration.md and docs/http-api.md carry tables written from the
 * code (scripts/gen-docs.ts): a new setting or route without `npm run docs`
 * fails here, so the docs cannot drift from what the server does.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { generatedDocs, ROOT, withGenerated } from '../../scripts/gen-docs.ts';
import { SETTINGS } from '../../src/core/config.ts';

describe('generated docs', () => {
  it('are current: run `npm run docs` when this fails', async () => {
    for (const { file, generated } of await generatedDocs()) {
      const text = readFileSync(path.join(ROOT, file), 'utf8');
      expect(withGenerated(text, generated, file), `${file} is stale: run npm run docs`).toBe(text);
    }
  });

  it('list every setting and every route', async () => {
    const [config, api] = await generatedDocs();
    for (const s of SETTINGS) expect(config!.generated).toContain(`\`${s.env}\``);
    expect(api!.generated).toContain('`POST /queues/:queue/claim`');
    expect(api!.generated).toContain('`POST /jobs/:id/heartbeat`');
  });
});
