/**
 * Where the servers' log records go: stdout, one line each. JSON lines when
 * stdout is not a terminal (a container, systemd, a pipe: what log collectors
 * parse), readable text when it is (a person at a terminal).
 * LEASEHOLD_LOG_FORMAT=json|text overrides the guess; LEASEHOLD_LOG_LEVEL
 * (debug, info, warn, error) drops what is below it.
 */
import { createLogger, type LogFields, type Logger, type LogLevel, type LogRecord } from '../core/log.ts';

export type LogFormat = 'auto' | 'json' | 'text';

/** One JSON line. JSON.stringify escapes C0 controls; DEL, C1 and U+2028/2029 are escaped too (the same text once parsed). */
export function formatJson(record: LogRecord): string {
  return escapeControls(JSON.stringify(record, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value)));
}

/**
 * `22:10:02.123 INFO  GET /api/v1/jobs/:id 200 3ms requestId=... jobId=42`:
 * time of day (UTC), level, message, then the fields as key=value (strings
 * with spaces, quotes, `=` or backslashes quoted, objects as JSON). A stack
 * goes on the lines below, indented.
 *
 * One record is one line: control characters anywhere in it (a newline in a
 * 404's path, a worker id, an error message; ANSI escapes; C1 controls) are
 * written as escapes (`\n`, `\u001b`), so nobody who can put text into a
 * field can forge a line or repaint the operator's terminal (JSON lines
 * likewise, formatJson).
 */
export function formatText(record: LogRecord): string {
  const { time, level, msg, ...fields } = record;
  let stack: string | undefined;
  const pairs = Object.entries(fields).map(([key, value]) => {
    if (key === 'error' && value && typeof value === 'object' && 'stack' in value) {
      const { stack: s, ...rest } = value as LogFields;
      stack = typeof s === 'string' ? s : undefined;
      return `${escapeControls(key)}=${escapeControls(JSON.stringify(rest))}`;
    }
    return `${escapeControls(key)}=${textValue(value)}`;
  });
  const line = [time.slice(11, 23), level.toUpperCase().padEnd(5), escapeControls(msg), ...pairs].join(' ');
  return stack ? `${line}\n${stack.split('\n').map((l) => `    ${escapeControls(l)}`).join('\n')}` : line;
}

/** C0 and C1 controls, DEL, and the Unicode line and paragraph separators: never written raw. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;
const SHORT_ESCAPES: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

function escapeControls(text: string): string {
  return text.replace(CONTROL, (ch) => SHORT_ESCAPES[ch] ?? `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A value written bare only when it cannot be mistaken for anything else. */
const BARE = /^[^\s"=\\\u0000-\u001f\u007f-\u009f]+$/;

function textValue(value: unknown): string {
  if (typeof value === 'string') return BARE.test(value) ? value : escapeControls(JSON.stringify(value));
  if (typeof value === 'object' && value !== null) return escapeControls(JSON.stringify(value));
  return escapeControls(String(value));
}

interface Stream {
  isTTY?: boolean;
  write(text: string): unknown;
}

/**
 * A logger that writes one line per record to `stream` (default
 * process.stdout), as JSON or text by `format` ('auto': text on a terminal).
 */
export function streamLogger(options: { level?: LogLevel; format?: LogFormat; stream?: Stream; base?: LogFields } = {}): Logger {
  const stream = options.stream ?? (process.stdout as Stream);
  const format = options.format === 'json' || options.format === 'text' ? options.format : stream.isTTY ? 'text' : 'json';
  const render = format === 'json' ? formatJson : formatText;
  return createLogger({ level: options.level ?? 'info', base: options.base, sink: (record) => void stream.write(`${render(record)}\n`) });
}

/** A logger for the console (Deno, Workers): JSON or text lines through console.log/warn/error. */
export function consoleLogger(options: { level?: LogLevel; format?: LogFormat; base?: LogFields } = {}): Logger {
  const render = options.format === 'text' ? formatText : formatJson;
  return createLogger({
    level: options.level ?? 'info',
    base: options.base,
    sink: (record) => {
      const line = render(record);
      if (record.level === 'error') console.error(line);
      else if (record.level === 'warn') console.warn(line);
      else console.log(line);
    },
  });
}

/** The servers' logger (Node, Bun): one line per record on stdout, at the configured level and format. */
export const serverLogger = (config: { logLevel: LogLevel; logFormat: LogFormat }): Logger => streamLogger({ level: config.logLevel, format: config.logFormat });
