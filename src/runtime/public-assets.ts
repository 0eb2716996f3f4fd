/**
 * Serving public/ (the dashboard's CSS, vendored htmx, robots.txt) for the
 * runtimes that do not serve it themselves: from disk (Node, Deno) or from the
 * files a Bun binary carries. Workers serve public/ as wrangler assets.
 * Only known file types, never dotfiles, never a path outside public/.
 */
import { readFile } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';

const CONTENT_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
};

export type Assets = (path: string) => Promise<Response | undefined>;

/** The request path as a path inside public/ (`css/a.css`), or undefined if it may not be served. */
function insidePublic(path: string): string | undefined {
  let rel: string;
  try {
    rel = decodeURIComponent(path);
  } catch {
    return undefined;
  }
  rel = rel.replace(/^\/+/, '');
  if (rel === '' || rel.includes('\0') || rel.includes('\\') || /(^|\/)\./.test(rel)) return undefined;
  return CONTENT_TYPES[extname(rel)] ? rel : undefined;
}

function respond(rel: string, body: Uint8Array): Response {
  return new Response(body as Uint8Array<ArrayBuffer>, {
    headers: { 'content-type': CONTENT_TYPES[extname(rel)]!, 'cache-control': 'public, max-age=300', 'x-content-type-options': 'nosniff' },
  });
}

/** Files under `root` on disk. */
export function publicAssets(root: string): Assets {
  const base = resolve(root);
  return async function assetFromDisk(path) {
    const rel = insidePublic(path);
    if (rel === undefined) return undefined;
    const file = resolve(base, rel);
    if (!file.startsWith(base + sep)) return undefined;
    try {
      return respond(rel, await readFile(file));
    } catch {
      return undefined;
    }
  };
}

/** Files carried in memory (a compiled binary), keyed by their path inside public/. */
export function assetsFromFiles(files: ReadonlyMap<string, Uint8Array>): Assets {
  return async function assetFromMemory(path) {
    const rel = insidePublic(path);
    const body = rel === undefined ? undefined : files.get(rel);
    return body === undefined ? undefined : respond(rel!, body);
  };
}
