/** Polls `check` until it returns a truthy value, for tests that wait on real processes and timers. */
export async function until<T>(
  what: string,
  check: () => Promise<T | undefined | false | null> | T | undefined | false | null,
  timeoutMs = 20_000,
  /** More to say when it times out (a process's output, a side-effect log). */
  context?: () => string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${context ? `; ${context()}` : ''}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
