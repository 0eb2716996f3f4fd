/**
 * Structured logging, without a runtime: a Logger turns (message, fields)
 * into one record and hands it to a sink the runtime provides (stdout as JSON
 * lines or readable text in src/runtime/log.ts; console on Workers; an array
 * in tests). One record per request (src/api/request-log.ts) and per notable
 * event (a job reaped, a request refused, an alert firing or clearing).
 *
 * Secrets never reach a sink: a field whose name says token, secret,
 * password or authorization is replaced by "[redacted]" at any depth, and a
 * bearer token inside a message or string field is masked too.
 *
 * @example
 *   const log = createLogger({ level: 'info', sink: (r) => lines.push(r) });
 *   log.warn('reaper took a job back', { jobId: '42', queue: 'email', reason: 'lease_expired' });
 */
import { redactUrls } from './redact.ts';

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export type LogFields = Record<string, unknown>;

/** One log line, before formatting: time (ISO), level, msg, then the fields. */
export interface LogRecord extends LogFields {
  time: string;
  level: LogLevel;
  msg: string;
}

export type LogSink = (record: LogRecord) => void;

export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** Whether a record at this level would be written (to skip building costly fields). */
  enabled(level: LogLevel): boolean;
  /** A logger that adds these fields to every record. */
  child(fields: LogFields): Logger;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export const isLogLevel = (value: unknown): value is LogLevel => typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value);

export interface LoggerOptions {
  /** Records below this level are dropped. Default info. */
  level?: LogLevel;
  sink: LogSink;
  /** Fields on every record (after time, level and msg). */
  base?: LogFields;
  /** Default: wall clock. */
  now?: () => number;
}

export function createLogger(options: LoggerOptions): Logger {
  const min = RANK[options.level ?? 'info'];
  const now = options.now ?? Date.now;
  const make = (base: LogFields): Logger => {
    const write = (level: LogLevel) =>
      function log(message: string, fields?: LogFields) {
        if (RANK[level] < min) return;
        const record: LogRecord = { time: new Date(now()).toISOString(), level, msg: redactText(message), ...redactFields({ ...base, ...fields }) };
        try {
          options.sink(record);
        } catch {
          // A broken sink (a closed stdout) must not turn a request into a 500.
        }
      };
    return {
      debug: write('debug'),
      info: write('info'),
      warn: write('warn'),
      error: write('error'),
      enabled: (level) => RANK[level] >= min,
      child: (fields) => make({ ...base, ...fields }),
    };
  };
  return make(options.base ?? {});
}

/** Writes nothing: for tests and embedders who want silence. */
export const silentLogger: Logger = createLogger({ level: 'error', sink: () => {} });

const SECRET_KEY = /token|secret|password|authorization|cookie|apikey|api_key/i;
/** Field names that hold a secret's *meaning* but not the secret (lockToken is a fencing handle; it is shown). */
const NOT_SECRET = new Set(['lockToken', 'fencingToken']);
const MAX_DEPTH = 6;

/** The fields with every secret-named value replaced, and Errors turned into plain fields. */
export function redactFields(fields: LogFields): LogFields {
  return redactValue(fields, 0) as LogFields;
}

function redactValue(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return redactText(value);
  if (value instanceof Error) return errorFields(value);
  if (typeof value !== 'object' || value === null) return value;
  if (depth >= MAX_DEPTH) return '[nested]';
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
  const out: LogFields = {};
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined) continue;
    out[key] = SECRET_KEY.test(key) && !NOT_SECRET.has(key) ? '[redacted]' : redactValue(v, depth + 1);
  }
  return out;
}

/** Masks bearer tokens and URL credentials inside free text (an error message that quotes a header or a URL). */
export function redactText(text: string): string {
  return redactUrls(text.replace(/\b(Bearer|Basic)\s+[^\s"',;]+/gi, '$1 [redacted]'));
}

/** An error as log fields: its name and message, its cause's, and its stack. */
export function errorFields(err: unknown): LogFields {
  if (!(err instanceof Error)) return { message: redactText(String(err)) };
  const cause = err.cause instanceof Error ? { cause: `${err.cause.name}: ${redactText(err.cause.message)}` } : {};
  return { name: err.name, message: redactText(err.message), ...cause, ...(err.stack ? { stack: redactText(err.stack) } : {}) };
}
