/**
 * The loopback proxy the network-fault tests and the chaos run put between a
 * worker and its server: each mode holds or drops what it says, and nothing
 * else.
 */
import { createServer, request, type Server } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startProxy, type Proxy } from '../../tools/chaos/proxy.ts';

let server: Server;
let proxy: Proxy;
let heard: string[];

beforeEach(async () => {
  heard = [];
  server = createServer((req, res) => {
    heard.push(`${req.method} ${req.url}`);
    req.resume();
    req.on('end', () => res.end('ok'));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  proxy = await startProxy(() => port);
});

afterEach(async () => {
  await proxy.close();
  await new Promise<void>((r) => server.close(() => r()));
});

/** One POST through the proxy: its answer's body, or the error that ended it (after `timeoutMs`: 'timeout'). */
function post(path: string, timeoutMs = 600, body = '{}'): Promise<string> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port: proxy.port, path, method: 'POST', agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve(body));
      res.on('error', (e) => resolve((e as NodeJS.ErrnoException).code ?? 'error'));
    });
    req.setTimeout(timeoutMs, () => {
      req.destroy();
      resolve('timeout');
    });
    req.on('error', (e) => resolve((e as NodeJS.ErrnoException).code ?? 'error'));
    req.end(body);
  });
}

describe('fault proxy', () => {
  it('forwards while open', async () => {
    expect(await post('/a')).toBe('ok');
    expect(heard).toEqual(['POST /a']);
  });

  it('stall holds both directions: the server never hears the request', async () => {
    void proxy.partition('stall', 1_000);
    expect(await post('/a')).toBe('timeout');
    expect(heard).toEqual([]);
  });

  it('stall_requests holds what the worker sends', async () => {
    void proxy.partition('stall_requests', 1_000);
    expect(await post('/a')).toBe('timeout');
    expect(heard).toEqual([]);
  });

  it('stall_answers lets the request act and holds its answer', async () => {
    void proxy.partition('stall_answers', 1_000);
    expect(await post('/a')).toBe('timeout');
    expect(heard).toEqual(['POST /a']);
  });

  it('a stall ends: held bytes move again', async () => {
    await proxy.partition('stall_answers', 100);
    expect(await post('/b')).toBe('ok');
  });

  it('dropAnswers lets the matching request act and resets its answer, once', async () => {
    proxy.dropAnswers((head) => head.startsWith('POST /drop'));
    expect(await post('/keep')).toBe('ok');
    expect(await post('/drop')).toBe('ECONNRESET');
    expect(await post('/drop')).toBe('ok');
    expect(heard).toEqual(['POST /keep', 'POST /drop', 'POST /drop']);
    expect(proxy.stats.answersDropped).toBe(1);
    expect(proxy.dropped).toEqual([{ at: expect.any(Number), head: 'POST /drop HTTP/1.1' }]);
  });

  it('delayAnswers holds answers for the delay, then passes them on whole', async () => {
    void proxy.delayAnswers(400, 1_000);
    const started = Date.now();
    expect(await post('/slow', 2_000)).toBe('ok');
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
    expect(proxy.stats.answersDelayed).toBeGreaterThan(0);
  });

  it('dropAnswers matches the body too, when it came with the head', async () => {
    proxy.dropAnswers((head) => head.startsWith('POST /a') && head.includes('"claim":{'));
    expect(await post('/a', 600, '{"results":[]}')).toBe('ok');
    expect(await post('/a', 600, '{"results":[],"claim":{"limit":1}}')).toBe('ECONNRESET');
    expect(proxy.stats.answersDropped).toBe(1);
  });
});
