/**
 * A server that cannot start for a reason the operator must fix (the port is
 * taken, the database cannot be reached): one line, printed as is, exit 1. No
 * stack trace: the message says what and where.
 */
export class StartupError extends Error {
  override readonly name = 'StartupError';
}

/** The innermost cause's message: the one that names the real problem (ECONNREFUSED...), not the wrapper's query text. */
export function rootMessage(err: unknown): string {
  let e = err;
  for (let depth = 0; depth < 10 && e instanceof Error && e.cause !== undefined; depth++) e = e.cause;
  const message = e instanceof Error ? e.message : String(e);
  return message.split('\n')[0]!;
}
