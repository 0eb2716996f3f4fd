/**
 * Finds a Redis for the BullMQ rows: REDIS_URL when set, else 127.0.0.1:6379,
 * then 127.0.0.1:6390 (where ../shared/peers-bench starts one without
 * persistence). Answers why not when none answers, so the bench can skip.
 */
export interface RedisTarget {
  url: string;
  /** For BullMQ's `connection` option (it makes its own ioredis clients). */
  connection: { host: string; port: number; username?: string; password?: string; db?: number };
  /** Version and persistence settings, for the report. */
  describe: string;
}

function candidates(): string[] {
  const url = process.env.REDIS_URL;
  return url ? [url] : ['redis://127.0.0.1:6379', 'redis://127.0.0.1:6390'];
}

function connectionOf(url: string): RedisTarget['connection'] {
  const u = new URL(url);
  const db = Number(u.pathname.slice(1));
  return {
    host: u.hostname,
    port: Number(u.port || 6379),
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(db > 0 ? { db } : {}),
  };
}

export async function findRedis(): Promise<RedisTarget | { skip: string }> {
  let IORedis: typeof import('ioredis').default;
  try {
    IORedis = (await import('ioredis')).default;
  } catch {
    return { skip: 'ioredis is not installed (npm ci installs it as a devDependency)' };
  }
  const tried: string[] = [];
  for (const url of candidates()) {
    const redis = new IORedis(url, { lazyConnect: true, connectTimeout: 1_000, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
    redis.on('error', () => {});
    try {
      await redis.connect();
      await redis.ping();
      const info = await redis.info('server');
      const version = /redis_version:(\S+)/.exec(info)?.[1] ?? '?';
      const aof = ((await redis.config('GET', 'appendonly')) as string[])[1];
      const save = ((await redis.config('GET', 'save')) as string[])[1];
      const u = new URL(url);
      return { url, connection: connectionOf(url), describe: `Redis ${version} at ${u.hostname}:${u.port || 6379}, appendonly=${aof}, save='${save}'` };
    } catch (err) {
      tried.push(`${url}: not reachable (${(err as Error).message})`);
    } finally {
      redis.disconnect();
    }
  }
  return { skip: `no Redis answered (${tried.join('; ')}); set REDIS_URL, or start one: redis-server --port 6379 --save '' --appendonly no` };
}
