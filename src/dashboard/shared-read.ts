/**
 * One read shared by every dashboard poll within `ttlMs`.
 *
 * Each open tab polls its live fragment every 2 s, and the overview, metrics,
 * alerts and tuning pages each read a metrics snapshot (tens of ms at a
 * million retained jobs, on the same connection the workers' claims use).
 * Sharing the read makes ten open tabs cost the database what one does:
 * concurrent callers wait on the same promise, later ones reuse its result
 * until it is `ttlMs` old. A failed read is not kept.
 *
 * @example
 *   const snapshot = sharedRead(() => store.metricsSnapshot({ now: DB_CLOCK, config }), 1_000);
 *   await Promise.all([snapshot(), snapshot()]); // one read
 */
export function sharedRead<T>(read: () => Promise<T>, ttlMs: number, clock: () => number = () => Date.now()): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    const at = clock();
    if (last && at - last.at < ttlMs && at >= last.at) return last.value;
    const value = read();
    const entry = { at, value };
    last = entry;
    value.catch(() => {
      if (last === entry) last = undefined;
    });
    return value;
  };
}
