/**
 * `leasehold work --queue Q [flags] -- CMD ARGS...`: runs a command per job.
 *
 * The child is spawned without a shell (spawn(CMD, ARGS)) in its own process
 * group, and gets:
 * - the payload as JSON on stdin (stdin is then closed);
 * - LEASEHOLD_PAYLOAD (the same JSON) in its environment, unless the JSON is
 *   larger than 100 KB: then it is on stdin only (a larger variable risks E2BIG);
 * - LEASEHOLD_JOB_ID, LEASEHOLD_QUEUE, LEASEHOLD_ATTEMPT, LEASEHOLD_IDEMPOTENCY_KEY
 *   and LEASEHOLD_FENCING_TOKEN.
 *
 * Outcome by exit status:
 * - 0: the job completes with { exitCode: 0, stdout, stderr } (the last
 *   --output-bytes of each stream), plus `json` when the whole stdout parses
 *   as JSON;
 * - 65 (EX_DATAERR): the job fails for good (no more attempts);
 * - 75 (EX_TEMPFAIL) and any other non-zero status or signal: the attempt
 *   fails and the job is retried while it has attempts left;
 * - a command that cannot be started (not found, not executable) fails the
 *   job for good.
 *
 * The SDK heartbeats while the child runs. When the job's signal is aborted
 * (lease lost, deadline, shutdown) the child's process group gets SIGTERM,
 * then SIGKILL after 2 s if it has not exited. On SIGTERM / SIGINT the worker
 * stops claiming, terminates the running children the same way and, once they
 * are gone, releases their leases so the jobs run again at once.
 */
import { spawn } from 'node:child_process';
import type { Config } from '../core/config.ts';
import { redactUrl } from '../core/redact.ts';
import { JobAbortedError, NonRetryableError } from '../worker/errors.ts';
import { httpTransport } from '../worker/http-transport.ts';
import type { Transport } from '../worker/transport.ts';
import { createWorker, type JobContext, type Logger, type Worker } from '../worker/worker.ts';
import { UsageError, type CommandFlag } from '../core/args.ts';

/** sysexits.h: the input data was wrong; retrying cannot help. */
const EX_DATAERR = 65;
/** sysexits.h: a temporary failure; retry later. */
const EX_TEMPFAIL = 75;
/** Larger payloads go on stdin only. */
const MAX_ENV_PAYLOAD_BYTES = 100_000;
const DEFAULT_OUTPUT_BYTES = 16 * 1024;
const MAX_OUTPUT_BYTES = 256 * 1024;
/** How much of stderr goes into a failure message (the server keeps 16,000 characters). */
const ERROR_STDERR_CHARS = 4_000;

export const WORK_FLAGS: CommandFlag[] = [
  { flag: '--queue', help: 'queue to take jobs from (required)' },
  { flag: '--url', help: 'leasehold server URL (or LEASEHOLD_URL); without it, work on the database directly' },
  { flag: '--token', help: 'worker token for --url (same as --worker-token / LEASEHOLD_WORKER_TOKEN)' },
  { flag: '--concurrency', help: 'commands run at once (default 1)' },
  { flag: '--lease-ms', help: "lease to ask for per claim (default: the queue's)" },
  { flag: '--output-bytes', help: `bytes kept from the end of stdout and of stderr (default ${DEFAULT_OUTPUT_BYTES}, at most ${MAX_OUTPUT_BYTES})` },
];

export const WORK_DETAILS = `The command runs once per job, without a shell. It gets the payload as JSON on
stdin and in LEASEHOLD_PAYLOAD (stdin only above ${MAX_ENV_PAYLOAD_BYTES / 1000} KB), plus LEASEHOLD_JOB_ID,
LEASEHOLD_QUEUE, LEASEHOLD_ATTEMPT, LEASEHOLD_IDEMPOTENCY_KEY and LEASEHOLD_FENCING_TOKEN.
Exit 0 completes the job (result: exitCode, stdout and stderr tails, and json if
stdout is JSON). Exit ${EX_DATAERR} (EX_DATAERR) fails it for good; exit ${EX_TEMPFAIL} (EX_TEMPFAIL) and any other
failure is retried. On lease loss, deadline or shutdown the command's process
group gets SIGTERM, then SIGKILL 2 s later.`;

export interface ShellWorkerOptions {
  transport: Transport;
  queue: string;
  command: string;
  args: readonly string[];
  concurrency?: number;
  leaseMs?: number;
  /** Bytes kept from the end of each of stdout and stderr. Default 16 KiB. */
  outputBytes?: number;
  /** Between SIGTERM and SIGKILL. Default 2 s. */
  killGraceMs?: number;
  /** One line per job outcome. Default: stdout. */
  print?: (line: string) => void;
  logger?: Logger;
  /** Added to every child's environment (over process.env). */
  env?: Record<string, string>;
}

export type ShellWorker = Worker & {
  /** Terminates running commands, waits for them, then closes the worker and releases their leases. */
  shutdown(): Promise<void>;
  /** SIGKILLs every running command's process group now (a second Ctrl-C). */
  killNow(): void;
};

/** Keeps the last `capacity` bytes written: memory stays bounded whatever the output. */
export class TailBuffer {
  private readonly buf: Buffer;
  private start = 0;
  private length = 0;
  /** Bytes written in all. */
  total = 0;

  constructor(readonly capacity: number) {
    this.buf = Buffer.alloc(capacity);
  }

  push(chunk: Buffer) {
    this.total += chunk.length;
    const cap = this.capacity;
    if (cap === 0 || chunk.length === 0) return;
    if (chunk.length >= cap) {
      chunk.copy(this.buf, 0, chunk.length - cap);
      this.start = 0;
      this.length = cap;
      return;
    }
    const end = (this.start + this.length) % cap;
    const first = Math.min(chunk.length, cap - end);
    chunk.copy(this.buf, end, 0, first);
    chunk.copy(this.buf, 0, first);
    const grown = this.length + chunk.length;
    if (grown > cap) {
      this.start = (this.start + grown - cap) % cap;
      this.length = cap;
    } else {
      this.length = grown;
    }
  }

  get truncated() {
    return this.total > this.length;
  }

  bytes(): Buffer {
    const end = this.start + this.length;
    if (end <= this.capacity) return Buffer.from(this.buf.subarray(this.start, end));
    return Buffer.concat([this.buf.subarray(this.start), this.buf.subarray(0, end - this.capacity)]);
  }

  /** The tail as UTF-8; a character cut in half at the start of a truncated tail is dropped. */
  toString() {
    let b = this.bytes();
    if (this.truncated) {
      let skip = 0;
      while (skip < 3 && skip < b.length && (b[skip]! & 0xc0) === 0x80) skip++;
      b = b.subarray(skip);
    }
    return b.toString('utf8');
  }
}

interface ChildOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: TailBuffer;
  stderr: TailBuffer;
  /** We killed it because the worker is shutting down. */
  killedForShutdown: boolean;
}

const describeExit = (o: { code: number | null; signal: string | null }) => (o.signal ? `killed by ${o.signal}` : `exit ${o.code}`);

function signalGroup(pid: number, signal: NodeJS.Signals) {
  try {
    // Detached: the child leads its own process group; reach its children too.
    process.kill(process.platform === 'win32' ? pid : -pid, signal);
  } catch {
    // Already gone.
  }
}

function createShellWorker(o: ShellWorkerOptions): ShellWorker {
  const outputBytes = o.outputBytes ?? DEFAULT_OUTPUT_BYTES;
  const killGraceMs = o.killGraceMs ?? 2_000;
  const print = o.print ?? ((line: string) => console.log(line));
  /** Running children: terminate() each on shutdown. */
  const children = new Map<string, { pid: number; terminate(): void; closed: Promise<void> }>();
  /** Jobs whose handler runs a command or whose outcome is not reported yet. */
  const busy = new Set<string>();
  let stopping = false;

  function runChild(ctx: JobContext): Promise<ChildOutcome> {
    const payload = JSON.stringify(ctx.job.payload ?? null);
    const env: Record<string, string | undefined> = {
      ...process.env,
      ...o.env,
      LEASEHOLD_JOB_ID: ctx.job.id,
      LEASEHOLD_QUEUE: ctx.job.queue,
      LEASEHOLD_ATTEMPT: String(ctx.job.attempt),
      LEASEHOLD_IDEMPOTENCY_KEY: ctx.idempotencyKey,
      LEASEHOLD_FENCING_TOKEN: String(ctx.fencingToken),
      LEASEHOLD_PAYLOAD: Buffer.byteLength(payload) <= MAX_ENV_PAYLOAD_BYTES ? payload : undefined,
    };
    if (env.LEASEHOLD_PAYLOAD === undefined) delete env.LEASEHOLD_PAYLOAD;

    return new Promise<ChildOutcome>((resolve, reject) => {
      const stdout = new TailBuffer(outputBytes);
      const stderr = new TailBuffer(outputBytes);
      const child = spawn(o.command, o.args, { env, stdio: ['pipe', 'pipe', 'pipe'], detached: process.platform !== 'win32' });
      let spawned = false;
      let killedForShutdown = false;
      let killTimer: ReturnType<typeof setTimeout> | undefined;
      let resolveClosed!: () => void;
      const closed = new Promise<void>((r) => (resolveClosed = r));

      const terminate = () => {
        if (killTimer || child.pid === undefined || !spawned) return;
        const pid = child.pid;
        signalGroup(pid, 'SIGTERM');
        // SIGKILL whatever of the group still holds on (the leader or a grandchild keeping the pipes open).
        killTimer = setTimeout(() => signalGroup(pid, 'SIGKILL'), killGraceMs);
      };
      const onAbort = () => terminate();

      child.once('spawn', () => {
        spawned = true;
        children.set(ctx.job.id, {
          pid: child.pid!,
          terminate() {
            killedForShutdown = true;
            terminate();
          },
          closed,
        });
        if (ctx.signal.aborted) terminate();
        else ctx.signal.addEventListener('abort', onAbort, { once: true });
      });
      child.once('error', (err: NodeJS.ErrnoException) => {
        if (spawned) return; // a kill that failed; 'close' still comes
        resolveClosed();
        reject(new NonRetryableError(`cannot run ${JSON.stringify(o.command)}: ${err.code ?? err.message}`));
      });
      child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
      child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
      // A command that exits without reading stdin makes the write fail with EPIPE: not an error.
      child.stdin.on('error', () => {});
      child.stdin.end(payload);
      child.once('close', (code, signal) => {
        clearTimeout(killTimer);
        ctx.signal.removeEventListener('abort', onAbort);
        children.delete(ctx.job.id);
        resolveClosed();
        if (!spawned) return;
        resolve({ code, signal, stdout, stderr, killedForShutdown });
      });
    });
  }

  /** Waits until the worker aborts the job (at close), so its lease is released rather than failed. */
  const parkUntilReleased = (signal: AbortSignal) =>
    new Promise<never>((_, reject) => {
      if (signal.aborted) return reject(signal.reason);
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    });

  async function handler(ctx: JobContext): Promise<unknown> {
    if (stopping) return parkUntilReleased(ctx.signal);
    busy.add(ctx.job.id);
    const out = await runChild(ctx);
    if (ctx.signal.aborted) {
      const reason = ctx.signal.reason as JobAbortedError;
      throw new Error(`${reason.message}; command ${describeExit(out)}${stderrSuffix(out.stderr)}`);
    }
    if (out.killedForShutdown && out.code !== 0) {
      busy.delete(ctx.job.id);
      return parkUntilReleased(ctx.signal);
    }
    if (out.code === 0) {
      const stdout = out.stdout.toString();
      const result: { exitCode: 0; stdout: string; stderr: string; json?: unknown } = { exitCode: 0, stdout, stderr: out.stderr.toString() };
      if (!out.stdout.truncated && stdout.trim() !== '') {
        try {
          result.json = JSON.parse(stdout);
        } catch {
          // Not JSON: the text is enough.
        }
      }
      return result;
    }
    const message = `${describeExit(out)}${stderrSuffix(out.stderr)}`;
    if (out.code === EX_DATAERR) throw new NonRetryableError(message);
    throw new Error(message);
  }

  const worker = createWorker({
    transport: o.transport,
    queue: o.queue,
    concurrency: o.concurrency ?? 1,
    ...(o.leaseMs !== undefined ? { leaseMs: o.leaseMs } : {}),
    handleSignals: false,
    drainTimeoutMs: 0,
    ...(o.logger ? { logger: o.logger } : {}),
    handler,
  });

  const oneLine = (err: unknown) => {
    const text = (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ').trim();
    return text.length > 300 ? `${text.slice(0, 300)}...` : text;
  };
  worker.on('completed', ({ job }) => {
    busy.delete(job.id);
    print(`job ${job.id} completed (exit 0)`);
  });
  worker.on('failed', ({ job, error, retryable }) => {
    busy.delete(job.id);
    const retry = retryable && job.attempt < job.maxAttempts;
    print(`job ${job.id} failed: ${oneLine(error)} (attempt ${job.attempt} of ${job.maxAttempts}${retry ? ', will retry' : ', no more attempts'})`);
  });
  worker.on('abandoned', ({ job, reason }) => {
    busy.delete(job.id);
    print(`job ${job.id} abandoned: ${reason}`);
  });
  worker.on('lease_lost', ({ job, message }) => print(`job ${job.id} lost its lease: ${message}`));
  worker.on('stopped', ({ released }) => {
    if (released.length) print(`released job(s) ${released.join(', ')}`);
  });

  let shutdown: Promise<void> | undefined;
  return Object.assign(worker, {
    shutdown() {
      shutdown ??= (async () => {
        stopping = true;
        const running = [...children.values()];
        for (const c of running) c.terminate();
        await Promise.all(running.map((c) => c.closed));
        // Let the outcomes of commands that finished on their own reach the server first.
        const deadline = Date.now() + 10_000;
        while (busy.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        await worker.close({ drainTimeoutMs: 0 });
      })();
      return shutdown;
    },
    killNow() {
      for (const c of children.values()) signalGroup(c.pid, 'SIGKILL');
    },
  });
}

function stderrSuffix(stderr: TailBuffer) {
  const text = stderr.toString().trimEnd();
  if (!text) return '';
  return `: ${text.length > ERROR_STDERR_CHARS ? `...${text.slice(-ERROR_STDERR_CHARS)}` : text}`;
}

function wholeNumber(flags: Map<string, string | true>, flag: string, min: number, max: number): number | undefined {
  const v = flags.get(flag);
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !/^\d+$/.test(v) || Number(v) < min || Number(v) > max) throw new UsageError(`${flag} must be a whole number from ${min} to ${max}`);
  return Number(v);
}

/** The `work` command: runs until SIGTERM / SIGINT. */
export async function workCommand(config: Config, flags: Map<string, string | true>, trailing: readonly string[]): Promise<'keep-running'> {
  const queue = flags.get('--queue');
  if (typeof queue !== 'string' || queue === '') throw new UsageError('--queue is required');
  const [command, ...args] = trailing;
  if (command === undefined || command === '') throw new UsageError('no command: put it after --, e.g. leasehold work --queue q -- ./handle.sh');
  const concurrency = wholeNumber(flags, '--concurrency', 1, 1_000);
  const leaseMs = wholeNumber(flags, '--lease-ms', 1_000, config.maxLeaseMs);
  const outputBytes = wholeNumber(flags, '--output-bytes', 0, MAX_OUTPUT_BYTES);
  const urlFlag = flags.get('--url');
  const url = typeof urlFlag === 'string' ? urlFlag : process.env.LEASEHOLD_URL || undefined;
  // --token, or the worker token setting every command takes (--worker-token / LEASEHOLD_WORKER_TOKEN).
  const tokenFlag = flags.get('--token');
  const token = typeof tokenFlag === 'string' ? tokenFlag : config.workerToken;

  // Loaded only when needed, so `leasehold --help` and `work --url` skip the database code.
  const opened = url === undefined ? await (await import('../runtime/node.ts')).openDatabase(config) : undefined;
  // stderr: stdout belongs to nobody here, but the commands' own output is what people read.
  const line = (m: string, fields?: Record<string, unknown>) =>
    console.error([`leasehold work: ${m}`, ...Object.entries(fields ?? {}).filter(([k]) => k !== 'workerId').map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)].join(' '));
  const logger: Logger = { info: line, warn: line, error: line };
  const transport = opened ? await inProcessTransport(opened.db, config) : httpTransport({ url: url!, token });
  const worker = createShellWorker({ transport, queue, command, args, concurrency, leaseMs, outputBytes, logger });
  worker.start();
  console.error(`leasehold work: worker ${worker.id} on queue ${queue} (${redactUrl(url || config.databaseUrl)}), running ${JSON.stringify([command, ...args])}`);

  // A refused token stops the worker (the SDK logged why): the command fails instead of retrying forever.
  worker.on('stopped', (e) => {
    if (e.error === undefined) return;
    opened?.close();
    process.exit(1);
  });

  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    if (++signals > 1) {
      console.error(`leasehold work: ${signal} again, killing running commands and exiting now`);
      worker.killNow();
      process.exit(1);
    }
    console.error(`leasehold work: ${signal}, stopping running commands and releasing their jobs`);
    void worker
      .shutdown()
      .catch((err) => console.error('leasehold work: shutdown failed', err))
      .finally(() => {
        opened?.close();
        process.exit(0);
      });
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return 'keep-running';
}

/** The in-process transport over its own engine: this process's workers are the only ones it wakes. */
async function inProcessTransport(db: import('../db/db.ts').Db, config: Config) {
  const [{ createEngine }, { createStore }, { dbTransport }, { databaseClock }, { createLogger }] = await Promise.all([
    import('../engine/engine.ts'),
    import('../db/store/create-store.ts'),
    import('../embedded/db-transport.ts'),
    import('../core/clock.ts'),
    import('../core/log.ts'),
  ]);
  return dbTransport(createEngine({ store: createStore(db), config, clock: databaseClock, log: createLogger({ level: config.logLevel, sink: () => {} }) }));
}
