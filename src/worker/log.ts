/** The worker's default logger, and the helper that stamps every call with the worker's id. */
import type { LogFields, Logger } from './types.ts';

export function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** One readable line per call: the message, then the fields as key=value (the worker id is in the prefix). */
export function consoleLogger(workerId: string): Logger {
  const line = (m: string, fields?: LogFields) => {
    const pairs = Object.entries(fields ?? {})
      .filter(([key, value]) => key !== 'workerId' && value !== undefined)
      .map(([key, value]) => `${key}=${typeof value === 'string' && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)}`);
    return [`leasehold worker ${workerId}: ${m}`, ...pairs].join(' ');
  };
  return {
    debug: () => {},
    info: (m, f) => console.log(line(m, f)),
    warn: (m, f) => console.warn(line(m, f)),
    error: (m, f) => console.error(line(m, f)),
  };
}

/** The same logger with `base` added to every call's fields. */
export function withFields(logger: Logger, base: LogFields): Required<Logger> {
  const call = (level: keyof Logger) => (message: string, fields?: LogFields) => logger[level]?.call(logger, message, { ...base, ...fields });
  return { debug: call('debug'), info: call('info'), warn: call('warn'), error: call('error') };
}
