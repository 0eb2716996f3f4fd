/**
 * Server configuration: every setting, its default, its environment variable
 * and CLI flag, and the rules that keep leases honest.
 *
 * The lease rules (docs/guarantees.md, "No job stays running forever"):
 * - a worker renews its lease every `heartbeatMs`; the lease must survive at
 *   least one missed beat, so `heartbeatMs <= leaseMs / 2` (a third is better);
 * - the reaper waits `graceMs` past expiry before it acts, which must cover a
 *   late heartbeat (`graceMs >= heartbeatMs`) plus clock skew; the longer the
 *   grace, the longer a dead worker's job waits to run again;
 * - a job whose lease expired but whose owner still beats its liveness row is
 *   given at most `maxReapDeferMs` more before it is taken anyway.
 *
 * Guarantee: at-least-once. Reaping a job whose worker was only slow (longer
 * than lease + grace without a successful heartbeat) runs it twice; the old
 * worker's writes are then refused by its lock token.
 */
import { redactUrl } from './redact.ts';
import { checkTokens } from './tokens.ts';

export interface QueueDefaults {
  /** How long a claim holds a job without a heartbeat. */
  leaseMs: number;
  /** How often workers should heartbeat (told to them in every claim). */
  heartbeatMs: number;
  /** How long past lease expiry the reaper waits before it takes a job back. */
  graceMs: number;
  /** Attempts (errored or lost) before a job fails for good. */
  maxAttempts: number;
  /** Times a job may lose its worker (crash, kill, hang) before it fails for good. */
  maxLostAttempts: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** How long finished jobs (and their events) are kept. */
  retentionMs: number;
  /**
   * Hard time limit per attempt: every claim gets a deadline of now + this (a
   * job's own `timeoutMs` wins). Past it the reaper takes the job back even
   * while it heartbeats, so a hung handler cannot hold its job forever. Like
   * any take-back, it may run the job twice if the handler was only slow.
   */
  timeoutMs: number;
}

export interface Config extends QueueDefaults {
  databaseUrl: string;
  databaseAuthToken: string | undefined;
  /** Embedded file only: `normal` survives a process crash, `full` also a power cut (slower). */
  synchronous: 'normal' | 'full';
  busyTimeoutMs: number;
  host: string;
  port: number;
  workerToken: string | undefined;
  adminToken: string | undefined;
  /**
   * Read-only: a dashboard login that can look but not act, and the bearer
   * token for /metrics, GET /api/v1/metrics, /alerts and /tuning (nothing
   * else of the API). Needs the admin token set.
   */
  readonlyToken: string | undefined;
  /**
   * More tokens per role, `name:token,name2:token2` (src/core/tokens.ts):
   * several at once so one can be rotated without downtime, each named in the
   * audit. The single-token settings above keep working, named "default".
   */
  adminTokens: string | undefined;
  workerTokens: string | undefined;
  readonlyTokens: string | undefined;
  /** How long the operator audit (who changed what) is kept. */
  auditRetentionMs: number;
  /** 'true': a proxy in front is trusted for X-Forwarded-For and X-Forwarded-Proto. */
  trustProxy: 'true' | 'false';
  /**
   * How many proxies we run stand in front (with trustProxy): the client is
   * the X-Forwarded-For entry this many from the right, since only those
   * entries were appended by our proxies; what a client sent sits left of it.
   */
  trustProxyHops: number;
  reaperIntervalMs: number;
  /** A worker seen (claim, heartbeat, liveness beat) this recently counts as alive. */
  workerAliveMs: number;
  /** Longest the reaper defers an expired lease because its owner looks alive. */
  maxReapDeferMs: number;
  reaperBatchSize: number;
  pruneBatchSize: number;
  /**
   * Most edges, and most jobs, one statement of a failure cascade settles
   * (a failed or cancelled job's dependents, or a retry undoing that): the
   * write lock, and the embedded driver's event loop, are held for one
   * step at a time, other requests run between steps.
   */
  cascadeStepRows: number;
  /** Largest request body accepted: so also the largest payload, checkpoint or result a client can send. */
  maxPayloadBytes: number;
  /**
   * Most bytes of payloads and checkpoints one claim answers (a claim, or the
   * claim that rides on a completion): the claim statement takes jobs in claim
   * order while their sum stays within it, and always at least one job, so a
   * job larger than the budget is claimed alone. Keep it at least twice
   * maxPayloadBytes (a warning says so), so a job with a full payload and a
   * full checkpoint fits.
   */
  maxClaimBytes: number;
  /** Most queues there may be; enqueue to a new queue past it is refused. */
  maxQueues: number;
  requestTimeoutMs: number;
  /**
   * How long a client has to send a request's headers, counted from the
   * connection's start (so a socket that never sends a request is closed
   * after it) and from the first byte of each later request.
   */
  headersTimeoutMs: number;
  /**
   * Requests one connection may send ahead of their answers (HTTP
   * pipelining). They are answered one at a time, each after the answer
   * before it went out; one more is refused (429) and the connection closed.
   */
  maxPipelinedRequests: number;
  /** An answer that makes no progress for this long (its client stopped reading) closes its connection. */
  writeTimeoutMs: number;
  maxConnections: number;
  /** Claims that may wait for work on this server at once (waitMs); one more is answered 429 with Retry-After. */
  maxWaitingClaims: number;
  /** The same, per token (by its name; all callers count as one in open mode). */
  maxWaitingClaimsPerToken: number;
  /** How much of each JSON field (payload, result, checkpoint, progress, error, event messages) a dashboard page shows. */
  dashboardFieldBytes: number;
  maxClaimBatch: number;
  maxLeaseMs: number;
  /** Most jobs one bulk action (retry, cancel, requeue; dashboard, admin API, CLI) may change. */
  bulkActionCap: number;
  /** Most clients waiting on jobs at once (POST /jobs/wait) per server; one more is answered 429 with Retry-After. */
  maxJobWaits: number;
  /**
   * Where alert transitions are POSTed (http: or https:), by the reaper pass:
   * once when an alert starts firing, once when it clears. At-least-once: a
   * reaper that dies between the receiver's 2xx and recording it lets another
   * reaper send the same notification again (same `id`) after the lease.
   */
  alertWebhookUrl: string | undefined;
  /**
   * Asked by the reaper, before it takes a job whose lease expired, whether
   * the owner's process still exists (src/maintenance/owner-check.ts): gone
   * takes the job at once, alive defers it like a recent beat, anything else
   * (unknown, a timeout, an error) leaves today's rule. Not set: never asked.
   */
  ownerCheckUrl: string | undefined;
  /** How long the reaper waits for the owner check's answers in one pass. */
  ownerCheckTimeoutMs: number;
  /** Signs each webhook body: `x-leasehold-signature: sha256=<hex HMAC-SHA256 of the body>`. */
  alertWebhookSecret: string | undefined;
  /**
   * Alerts are evaluated at most this often, across every reaper sharing the
   * database (and at most once per reaper pass): a transition is noticed up to
   * this much (or one reaper interval / cron period, if longer) after it happens.
   */
  alertEveryMs: number;
  /** Log records below this level are dropped: debug, info, warn or error. */
  logLevel: 'debug' | 'info' | 'warn' | 'error';
  /** json (one object per line), text (readable), or auto: text when stdout is a terminal, else json. */
  logFormat: 'auto' | 'json' | 'text';
  /** Which requests get a log line, and at what level (src/api/request-log.ts). */
  requestLog: RequestLogMode;
}

type Kind = 'string' | 'secret' | 'int' | 'duration';

interface Setting {
  key: keyof Config;
  env: string;
  flag: string;
  kind: Kind;
  default: string | number | undefined;
  help: string;
}

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
/** The longest time limit an attempt may have (server, queue or job): there is no "never". */
export const MAX_JOB_TIMEOUT_MS = 30 * DAY;
const MIB = 1024 * 1024;
/**
 * The default claim budget: room for four jobs with a full 1 MiB payload and
 * checkpoint, and small enough that building one answer (read, parse,
 * encode) takes a fraction of a second on the event loop it shares with every
 * other request.
 */
export const DEFAULT_MAX_CLAIM_BYTES = 8 * MIB;
/**
 * The largest claim budget. A claim answer is one JSON string, and V8 (Node,
 * Deno, Workers) holds at most 2^29 - 24 characters (~512 MiB) in one string.
 * An answer is at most the budget, or one job alone that is over it: a payload
 * and a checkpoint of at most maxPayloadBytes each, capped at half this. Both
 * stay at 256 MiB plus the envelope, so encoding an answer cannot throw
 * `RangeError: Invalid string length`.
 */
export const MAX_CLAIM_BYTES_LIMIT = 256 * MIB;

export const SETTINGS: readonly Setting[] = [
  { key: 'databaseUrl', env: 'LEASEHOLD_DATABASE_URL', flag: '--database-url', kind: 'string', default: 'file:./leasehold.db', help: 'file:, libsql:// or http(s):// database URL' },
  { key: 'databaseAuthToken', env: 'LEASEHOLD_DATABASE_AUTH_TOKEN', flag: '--database-auth-token', kind: 'secret', default: undefined, help: 'auth token for a remote libSQL server' },
  { key: 'synchronous', env: 'LEASEHOLD_SYNCHRONOUS', flag: '--synchronous', kind: 'string', default: 'normal', help: 'embedded file: normal survives kill -9; full (fsync per commit) also a power cut' },
  { key: 'busyTimeoutMs', env: 'LEASEHOLD_BUSY_TIMEOUT_MS', flag: '--busy-timeout-ms', kind: 'duration', default: 5_000, help: 'embedded file: how long a write waits for another process holding the write lock before it answers 503' },
  { key: 'host', env: 'LEASEHOLD_HOST', flag: '--host', kind: 'string', default: '127.0.0.1', help: 'address to listen on; off loopback both tokens are required' },
  { key: 'port', env: 'LEASEHOLD_PORT', flag: '--port', kind: 'int', default: 8787, help: 'port to listen on (0 picks a free one); on Workers, which are not told their port: the one port open mode accepts with the loopback names (not set: any)' },
  { key: 'workerToken', env: 'LEASEHOLD_WORKER_TOKEN', flag: '--worker-token', kind: 'secret', default: undefined, help: 'bearer token for worker calls (16+ characters)' },
  { key: 'adminToken', env: 'LEASEHOLD_ADMIN_TOKEN', flag: '--admin-token', kind: 'secret', default: undefined, help: 'bearer token for admin calls (also accepted for worker calls)' },
  { key: 'readonlyToken', env: 'LEASEHOLD_READONLY_TOKEN', flag: '--readonly-token', kind: 'secret', default: undefined, help: 'dashboard login that can view but not act, and the bearer token of role reader: /metrics and GET /api/v1/metrics, /alerts, /tuning (needs the admin token)' },
  { key: 'adminTokens', env: 'LEASEHOLD_ADMIN_TOKENS', flag: '--admin-tokens', kind: 'secret', default: undefined, help: 'more admin tokens, name:token,name2:token2 (rotation; each name shows in the audit)' },
  { key: 'workerTokens', env: 'LEASEHOLD_WORKER_TOKENS', flag: '--worker-tokens', kind: 'secret', default: undefined, help: 'more worker tokens, name:token,name2:token2' },
  { key: 'readonlyTokens', env: 'LEASEHOLD_READONLY_TOKENS', flag: '--readonly-tokens', kind: 'secret', default: undefined, help: 'more read-only tokens, name:token,name2:token2' },
  { key: 'trustProxy', env: 'LEASEHOLD_TRUST_PROXY', flag: '--trust-proxy', kind: 'string', default: 'false', help: 'true behind a reverse proxy you run: the client address (login back-off, audit, request log) from X-Forwarded-For, HTTPS (Secure cookie) from X-Forwarded-Proto' },
  { key: 'trustProxyHops', env: 'LEASEHOLD_TRUST_PROXY_HOPS', flag: '--trust-proxy-hops', kind: 'int', default: 1, help: 'with LEASEHOLD_TRUST_PROXY: how many proxies you run in front, each appending to X-Forwarded-For; the client is that many entries from the right (entries further left are what the client sent, never trusted)' },
  { key: 'leaseMs', env: 'LEASEHOLD_LEASE_MS', flag: '--lease-ms', kind: 'duration', default: 30_000, help: 'default lease per claim' },
  { key: 'heartbeatMs', env: 'LEASEHOLD_HEARTBEAT_MS', flag: '--heartbeat-ms', kind: 'duration', default: 5_000, help: 'heartbeat interval workers are told to use (at most half the lease); not set: 5 s, or a third of LEASEHOLD_LEASE_MS when that is given and shorter (said on start)' },
  { key: 'graceMs', env: 'LEASEHOLD_GRACE_MS', flag: '--grace-ms', kind: 'duration', default: 10_000, help: 'how long past expiry before the reaper acts (at least one heartbeat interval); not set: 10 s, or a third of LEASEHOLD_LEASE_MS when that is given and shorter, never below the heartbeat (said on start)' },
  { key: 'reaperIntervalMs', env: 'LEASEHOLD_REAPER_INTERVAL_MS', flag: '--reaper-interval-ms', kind: 'duration', default: 5_000, help: 'how often the in-process reaper runs; also how often some reaper is expected to: /healthz, /metrics and the dashboard call it late past 3 intervals while jobs run (set it to the cron period where a cron runs it)' },
  { key: 'workerAliveMs', env: 'LEASEHOLD_WORKER_ALIVE_MS', flag: '--worker-alive-ms', kind: 'duration', default: 15_000, help: 'a worker seen this recently counts as alive' },
  { key: 'maxReapDeferMs', env: 'LEASEHOLD_MAX_REAP_DEFER_MS', flag: '--max-reap-defer-ms', kind: 'duration', default: 30_000, help: 'longest the reaper waits for a live owner past lease + grace' },
  { key: 'reaperBatchSize', env: 'LEASEHOLD_REAPER_BATCH', flag: '--reaper-batch', kind: 'int', default: 100, help: 'jobs the reaper takes back per pass at most' },
  { key: 'pruneBatchSize', env: 'LEASEHOLD_PRUNE_BATCH', flag: '--prune-batch', kind: 'int', default: 1_000, help: 'finished jobs pruned per pass at most' },
  { key: 'cascadeStepRows', env: 'LEASEHOLD_CASCADE_STEP_ROWS', flag: '--cascade-step-rows', kind: 'int', default: 500, help: 'most dependency edges, and most jobs, one statement of a failure cascade settles (a failed, cancelled or retried job\'s dependents, docs/flows.md): other requests run between its steps' },
  { key: 'retentionMs', env: 'LEASEHOLD_RETENTION_MS', flag: '--retention-ms', kind: 'duration', default: 7 * DAY, help: 'how long finished jobs and their events are kept' },
  { key: 'auditRetentionMs', env: 'LEASEHOLD_AUDIT_RETENTION_MS', flag: '--audit-retention-ms', kind: 'duration', default: 90 * DAY, help: 'how long the operator audit (settings, pauses, thresholds, bulk actions, logins) is kept' },
  { key: 'timeoutMs', env: 'LEASEHOLD_JOB_TIMEOUT_MS', flag: '--job-timeout-ms', kind: 'duration', default: HOUR, help: 'hard time limit per attempt, enforced even while the job heartbeats (a queue\'s or job\'s own timeoutMs wins); at least the lease, at most 30 days' },
  { key: 'maxAttempts', env: 'LEASEHOLD_MAX_ATTEMPTS', flag: '--max-attempts', kind: 'int', default: 5, help: 'default attempts per job' },
  { key: 'maxLostAttempts', env: 'LEASEHOLD_MAX_LOST_ATTEMPTS', flag: '--max-lost-attempts', kind: 'int', default: 3, help: 'times a job may lose its worker before it fails' },
  { key: 'backoffBaseMs', env: 'LEASEHOLD_BACKOFF_BASE_MS', flag: '--backoff-base-ms', kind: 'duration', default: 1_000, help: 'first retry delay (doubles per attempt, jittered)' },
  { key: 'backoffMaxMs', env: 'LEASEHOLD_BACKOFF_MAX_MS', flag: '--backoff-max-ms', kind: 'duration', default: 10 * MINUTE, help: 'longest retry delay' },
  { key: 'maxPayloadBytes', env: 'LEASEHOLD_MAX_PAYLOAD_BYTES', flag: '--max-payload-bytes', kind: 'int', default: 1024 * 1024, help: 'largest request body accepted (413 above): so also the largest payload, checkpoint or result; at most 134217728 (128 MiB)' },
  { key: 'maxClaimBytes', env: 'LEASEHOLD_MAX_CLAIM_BYTES', flag: '--max-claim-bytes', kind: 'int', default: DEFAULT_MAX_CLAIM_BYTES, help: `most bytes of payloads and checkpoints one claim answers: jobs are taken in claim order while they fit, always at least one (a larger job comes alone); keep it at least twice the payload limit; at most ${MAX_CLAIM_BYTES_LIMIT} (256 MiB)` },
  { key: 'requestTimeoutMs', env: 'LEASEHOLD_REQUEST_TIMEOUT_MS', flag: '--request-timeout-ms', kind: 'duration', default: 30_000, help: 'longest a client may take to send one request, headers and body; slower clients get 408 and are disconnected (at least 1000; Node server)' },
  { key: 'headersTimeoutMs', env: 'LEASEHOLD_HEADERS_TIMEOUT_MS', flag: '--headers-timeout-ms', kind: 'duration', default: 10_000, help: 'longest a client may take to send a request\'s headers, from the connection\'s start or the request\'s first byte: a socket that sends no request is closed after it (at least 1000; a shorter request timeout wins; Node and Bun)' },
  { key: 'maxPipelinedRequests', env: 'LEASEHOLD_MAX_PIPELINED', flag: '--max-pipelined', kind: 'int', default: 16, help: 'requests one connection may send ahead of their answers (HTTP pipelining, which browsers and the SDK do not use): answered one at a time, one more gets a 429 and the connection is closed (Node server; Bun and Deno read no further ahead)' },
  { key: 'writeTimeoutMs', env: 'LEASEHOLD_WRITE_TIMEOUT_MS', flag: '--write-timeout-ms', kind: 'duration', default: 30_000, help: 'an answer that makes no progress for this long, because its client stopped reading, closes the connection; waiting claims are not affected (at least 1000; Node and Bun)' },
  { key: 'maxConnections', env: 'LEASEHOLD_MAX_CONNECTIONS', flag: '--max-connections', kind: 'int', default: 1_000, help: 'open connections at most; more are dropped at once (Node server)' },
  { key: 'maxWaitingClaims', env: 'LEASEHOLD_MAX_WAITING_CLAIMS', flag: '--max-waiting-claims', kind: 'int', default: 500, help: 'claims (with waitMs) that may wait for work on this server at once; one more that finds nothing is answered 429 with Retry-After instead of waiting (the SDK then claims again after it)' },
  { key: 'maxWaitingClaimsPerToken', env: 'LEASEHOLD_MAX_WAITING_CLAIMS_PER_TOKEN', flag: '--max-waiting-claims-per-token', kind: 'int', default: 250, help: 'the same per token, counted by the token\'s name (one count in open mode), so one named token cannot take every waiting slot' },
  { key: 'dashboardFieldBytes', env: 'LEASEHOLD_DASHBOARD_FIELD_BYTES', flag: '--dashboard-field-bytes', kind: 'int', default: 32 * 1024, help: 'bytes of HTML a dashboard page spends on each JSON field (payload, result, checkpoint, progress, last error, the events\' messages together); the rest is one click away as a download (at least 1024)' },
  { key: 'maxQueues', env: 'LEASEHOLD_MAX_QUEUES', flag: '--max-queues', kind: 'int', default: 1_000, help: 'most queues in use there may be (holding jobs in any status, settings of their own or a schedule; an emptied queue with default settings does not count): an enqueue or schedule that would put one more in use is a 409 naming the limit and stores nothing (queues in use keep working); DELETE /api/v1/queues/:queue or `leasehold queues delete` frees a place' },
  { key: 'maxClaimBatch', env: 'LEASEHOLD_MAX_CLAIM_BATCH', flag: '--max-claim-batch', kind: 'int', default: 500, help: 'most jobs one claim may take' },
  { key: 'maxLeaseMs', env: 'LEASEHOLD_MAX_LEASE_MS', flag: '--max-lease-ms', kind: 'duration', default: DAY, help: 'longest lease a worker may ask for' },
  { key: 'bulkActionCap', env: 'LEASEHOLD_BULK_ACTION_CAP', flag: '--bulk-action-cap', kind: 'int', default: 100, help: 'most jobs one bulk action (dashboard, API, CLI) may change' },
  { key: 'maxJobWaits', env: 'LEASEHOLD_MAX_JOB_WAITS', flag: '--max-job-waits', kind: 'int', default: 1_000, help: 'most requests waiting on jobs at once (POST /api/v1/jobs/wait, the client\'s waitForJob(s) and events) per server, each naming up to 1,000 jobs; one more gets a 429 with Retry-After (on Workers: per isolate)' },
  { key: 'alertWebhookUrl', env: 'LEASEHOLD_ALERT_WEBHOOK_URL', flag: '--alert-webhook-url', kind: 'string', default: undefined, help: 'http(s) URL the reaper POSTs to when an alert starts firing and when it clears' },
  { key: 'ownerCheckUrl', env: 'LEASEHOLD_OWNER_CHECK_URL', flag: '--owner-check-url', kind: 'string', default: undefined, help: 'http(s) URL the reaper asks, before taking a job whose lease expired, whether its owner process exists (GET with worker, instance, host, pid; answer {"state":"alive"|"gone"|"unknown"}): gone takes the job at once, without the grace; alive waits as for a live worker; unknown or no answer: the usual rule (docs/owner-check.md)' },
  { key: 'ownerCheckTimeoutMs', env: 'LEASEHOLD_OWNER_CHECK_TIMEOUT_MS', flag: '--owner-check-timeout-ms', kind: 'duration', default: 1_000, help: 'how long one reaper pass waits for the owner check\'s answers; no answer in time counts as unknown (100 ms to 10 s)' },
  { key: 'alertWebhookSecret', env: 'LEASEHOLD_ALERT_WEBHOOK_SECRET', flag: '--alert-webhook-secret', kind: 'secret', default: undefined, help: 'signs each webhook POST: x-leasehold-signature: sha256=<hex HMAC-SHA256 of the body> (16+ characters)' },
  { key: 'alertEveryMs', env: 'LEASEHOLD_ALERT_EVERY_MS', flag: '--alert-every-ms', kind: 'duration', default: 15_000, help: 'alerts are evaluated at most this often, across all reapers sharing the database' },
  { key: 'logLevel', env: 'LEASEHOLD_LOG_LEVEL', flag: '--log-level', kind: 'string', default: 'info', help: 'debug, info, warn or error: lower levels are not logged' },
  {
    key: 'requestLog',
    env: 'LEASEHOLD_REQUEST_LOG',
    flag: '--request-log',
    kind: 'string',
    default: 'standard',
    help: "which requests get a log line: standard (every request; a worker's routine calls that succeed, claim, heartbeat, complete, fail, release, checkpoint, beat, at debug unless slow), all (every request at info), errors (only refusals, failures and slow requests), off; 4xx are warn and 5xx error in every mode but off",
  },
  { key: 'logFormat', env: 'LEASEHOLD_LOG_FORMAT', flag: '--log-format', kind: 'string', default: 'auto', help: 'json, text, or auto (text on a terminal, JSON lines otherwise)' },
];

export interface ConfigProblem {
  setting: string;
  rule: string;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(readonly problems: ConfigProblem[]) {
    super(problems.map((p) => `${p.setting}: ${p.rule}`).join('\n'));
  }

  /** What a server prints when it refuses to start: every broken rule, one per line. */
  startupMessage(): string {
    return `leasehold: cannot start, the configuration breaks a rule:\n${this.problems.map((p) => `  ${p.setting} ${p.rule}`).join('\n')}`;
  }
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);
const isLoopback = (host: string) => LOOPBACK.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);

/**
 * Reads settings from the environment, then CLI flags (flags win), and checks
 * them. Throws ConfigError naming every impossible setting; returns the risky
 * ones as warnings.
 */
export function loadConfig(
  env: Record<string, string | undefined>,
  args: readonly string[] = [],
): { config: Config; warnings: ConfigProblem[]; derived: ConfigProblem[] } {
  const problems: ConfigProblem[] = [];
  const raw: Record<string, unknown> = {};
  const given = new Set<keyof Config>();
  const flags = parseFlags(args, problems);
  for (const s of SETTINGS) {
    const fromFlag = flags.get(s.flag);
    const text = fromFlag ?? env[s.env];
    const name = fromFlag !== undefined ? s.flag : s.env;
    if (text === undefined || text === '') {
      raw[s.key] = s.default;
      continue;
    }
    given.add(s.key);
    if (s.kind === 'string' || s.kind === 'secret') {
      raw[s.key] = text;
    } else if (!/^-?\d+$/.test(text.trim())) {
      problems.push({ setting: name, rule: `must be a whole number${s.kind === 'duration' ? ' of milliseconds' : ''}, got ${JSON.stringify(text)}` });
    } else {
      raw[s.key] = Number(text.trim());
    }
  }
  if (problems.length) throw new ConfigError(problems);
  const config = raw as unknown as Config;
  const derived = deriveFromLease(config, given);
  const { errors, warnings } = checkConfig(config);
  if (errors.length) throw new ConfigError(errors);
  return { config, warnings, derived };
}

/**
 * Heartbeat and grace for a lease given without them: a third of the lease
 * each, never more than their own defaults (5 s, 10 s). A lease of 30 s or
 * more keeps the defaults; a shorter one (`--lease-ms 1000`) gets timings
 * that keep the rules (heartbeat at most half the lease, grace at least one
 * heartbeat) instead of a refusal over a heartbeat nobody chose. The same
 * third the claim tells workers to beat at (claimHeartbeatSql).
 */
export function leaseDerivedTimings(leaseMs: number): { heartbeatMs: number; graceMs: number } {
  const third = Math.floor(leaseMs / 3);
  return { heartbeatMs: Math.min(defaultOf('heartbeatMs'), third), graceMs: Math.min(defaultOf('graceMs'), third) };
}

const defaultOf = (key: 'heartbeatMs' | 'graceMs') => SETTINGS.find((s) => s.key === key)!.default as number;

/** Applies leaseDerivedTimings to what was not given (in place); says each value it changed (printed at start). */
export function deriveFromLease(config: Config, given: ReadonlySet<keyof Config>): ConfigProblem[] {
  if (!given.has('leaseMs') || typeof config.leaseMs !== 'number' || config.leaseMs <= 0) return [];
  const derived = leaseDerivedTimings(config.leaseMs);
  const said: ConfigProblem[] = [];
  if (!given.has('heartbeatMs') && derived.heartbeatMs !== config.heartbeatMs) {
    config.heartbeatMs = derived.heartbeatMs;
    said.push({ setting: envOf('heartbeatMs'), rule: `not set: ${derived.heartbeatMs} ms, a third of the ${config.leaseMs} ms lease (${envOf('leaseMs')}), instead of the default ${defaultOf('heartbeatMs')} ms` });
  }
  // Never below the heartbeat in force (given or derived): a late beat must still win.
  const grace = Math.max(derived.graceMs, config.heartbeatMs);
  if (!given.has('graceMs') && grace !== config.graceMs) {
    config.graceMs = grace;
    const why = grace === derived.graceMs ? `a third of the ${config.leaseMs} ms lease (${envOf('leaseMs')})` : `one heartbeat (${envOf('heartbeatMs')})`;
    said.push({ setting: envOf('graceMs'), rule: `not set: ${grace} ms, ${why}, instead of the default ${defaultOf('graceMs')} ms` });
  }
  return said;
}

/** The values of LEASEHOLD_REQUEST_LOG (src/api/request-log.ts says what each logs). */
export const REQUEST_LOG_MODES = ['standard', 'all', 'errors', 'off'] as const;
export type RequestLogMode = (typeof REQUEST_LOG_MODES)[number];

/** Default configuration, as if no variable or flag were set. */
export function defaultConfig(overrides: Partial<Config> = {}): Config {
  const config = Object.fromEntries(SETTINGS.map((s) => [s.key, s.default])) as unknown as Config;
  return { ...config, ...overrides };
}

function parseFlags(args: readonly string[], problems: ConfigProblem[]): Map<string, string> {
  const known = new Set(SETTINGS.map((s) => s.flag));
  const flags = new Map<string, string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    if (!known.has(flag)) {
      problems.push({ setting: flag, rule: 'is not a known option (see --help)' });
      continue;
    }
    const value = inline ?? args[++i];
    if (value === undefined) problems.push({ setting: flag, rule: 'needs a value' });
    else flags.set(flag, value);
  }
  return flags;
}

const envOf = (key: keyof Config) => SETTINGS.find((s) => s.key === key)!.env;

/** The rules. Errors stop the start; warnings are printed. */
export function checkConfig(c: Config): { errors: ConfigProblem[]; warnings: ConfigProblem[] } {
  const errors: ConfigProblem[] = [];
  const warnings: ConfigProblem[] = [];
  const err = (key: keyof Config, rule: string) => errors.push({ setting: envOf(key), rule });
  const warn = (key: keyof Config, rule: string) => warnings.push({ setting: envOf(key), rule });

  for (const s of SETTINGS) {
    const v = c[s.key];
    if (s.kind !== 'duration' && s.kind !== 'int') continue;
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) err(s.key, 'must be a whole number');
    else if (s.key === 'port' ? v < 0 || v > 65535 : v <= 0) {
      err(s.key, s.key === 'port' ? 'must be between 0 and 65535' : `must be greater than zero, got ${v}`);
    }
  }
  if (errors.length) return { errors, warnings };

  const lease = checkQueueSettings(c);
  errors.push(...lease.errors);
  warnings.push(...lease.warnings);
  if (c.maxClaimBytes > MAX_CLAIM_BYTES_LIMIT) {
    err('maxClaimBytes', `must be at most ${MAX_CLAIM_BYTES_LIMIT} (256 MiB): a claim answer is built as one string, got ${c.maxClaimBytes}`);
  }
  if (c.maxPayloadBytes > MAX_CLAIM_BYTES_LIMIT / 2) {
    err('maxPayloadBytes', `must be at most ${MAX_CLAIM_BYTES_LIMIT / 2} (128 MiB): a job's payload and checkpoint are answered in one string, got ${c.maxPayloadBytes}`);
  } else if (c.maxClaimBytes < 2 * c.maxPayloadBytes) {
    warn('maxClaimBytes', `is less than twice LEASEHOLD_MAX_PAYLOAD_BYTES (${2 * c.maxPayloadBytes}): a job with a full payload and checkpoint is over the claim budget, and is claimed alone`);
  }
  if (c.maxLeaseMs < c.leaseMs) err('maxLeaseMs', `must be at least the default lease (${c.leaseMs} ms)`);
  if (c.reaperIntervalMs > c.leaseMs) {
    warn('reaperIntervalMs', `is longer than the lease (${c.leaseMs} ms): dead workers' jobs wait up to lease + grace + interval to run again`);
  }
  // Node checks request timeouts once a second; less would cut off any client on a slow link.
  if (c.requestTimeoutMs < 1_000) err('requestTimeoutMs', `must be at least 1000 ms, got ${c.requestTimeoutMs}`);
  if (c.headersTimeoutMs < 1_000) err('headersTimeoutMs', `must be at least 1000 ms, got ${c.headersTimeoutMs}`);
  // Headers are part of the request, so the shorter request timeout applies to them.
  else if (c.headersTimeoutMs > c.requestTimeoutMs) warn('headersTimeoutMs', `is longer than the request timeout (${c.requestTimeoutMs} ms), which applies to the headers instead`);
  if (c.writeTimeoutMs < 1_000) err('writeTimeoutMs', `must be at least 1000 ms, got ${c.writeTimeoutMs}`);
  if (c.dashboardFieldBytes < 1_024) err('dashboardFieldBytes', `must be at least 1024, got ${c.dashboardFieldBytes}`);
  if (c.workerAliveMs < c.heartbeatMs) {
    err('workerAliveMs', `must be at least the heartbeat interval (${c.heartbeatMs} ms), or every worker looks dead between beats`);
  }
  if (!/^(file:|libsql:|https?:|wss?:)/.test(c.databaseUrl)) {
    err('databaseUrl', `must start with file:, libsql://, http:// or https://, got ${JSON.stringify(redactUrl(c.databaseUrl))}`);
  }
  if (c.trustProxy !== 'true' && c.trustProxy !== 'false') err('trustProxy', `must be true or false, got ${JSON.stringify(c.trustProxy)}`);
  if (!['debug', 'info', 'warn', 'error'].includes(c.logLevel)) err('logLevel', `must be debug, info, warn or error, got ${JSON.stringify(c.logLevel)}`);
  if (!['auto', 'json', 'text'].includes(c.logFormat)) err('logFormat', `must be auto, json or text, got ${JSON.stringify(c.logFormat)}`);
  if (!(REQUEST_LOG_MODES as readonly string[]).includes(c.requestLog)) err('requestLog', `must be ${REQUEST_LOG_MODES.join(', ')}, got ${JSON.stringify(c.requestLog)}`);
  if (c.synchronous !== 'normal' && c.synchronous !== 'full') err('synchronous', `must be normal or full, got ${JSON.stringify(c.synchronous)}`);
  const tokens = checkTokens(c);
  for (const p of tokens.errors) errors.push({ setting: envOf(p.key), rule: p.rule });
  if (tokens.errors.length === 0) {
    if (!isLoopback(c.host) && (tokens.worker.length === 0 || tokens.admin.length === 0)) {
      err('host', `is ${c.host}, off loopback: set LEASEHOLD_WORKER_TOKEN and LEASEHOLD_ADMIN_TOKEN (or their _TOKENS lists), or nothing would guard the API`);
    }
    // Without an admin token the dashboard is open (as admin): a read-only login would restrict nothing.
    if (tokens.readonly.length > 0 && tokens.admin.length === 0) {
      err(c.readonlyToken ? 'readonlyToken' : 'readonlyTokens', 'needs LEASEHOLD_ADMIN_TOKEN (without it the dashboard is open to everyone)');
    }
  }
  if (c.alertWebhookUrl !== undefined && !isHttpUrl(c.alertWebhookUrl)) {
    // The URL itself is not echoed: webhook URLs often carry a token in their path.
    err('alertWebhookUrl', 'must be an http:// or https:// URL');
  }
  if (c.ownerCheckUrl !== undefined && !isHttpUrl(c.ownerCheckUrl)) err('ownerCheckUrl', 'must be an http:// or https:// URL');
  if (c.ownerCheckTimeoutMs < 100 || c.ownerCheckTimeoutMs > 10_000) err('ownerCheckTimeoutMs', 'must be between 100 ms and 10 s: the reaper pass waits for it');
  if (c.alertWebhookSecret !== undefined && c.alertWebhookSecret.length < 16) err('alertWebhookSecret', 'must be at least 16 characters');
  if (c.alertWebhookSecret && !c.alertWebhookUrl) warn('alertWebhookSecret', 'is set but LEASEHOLD_ALERT_WEBHOOK_URL is not, so nothing is sent');
  return { errors, warnings };
}

function isHttpUrl(text: string): boolean {
  try {
    const url = new URL(text);
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

/**
 * The lease rules for one set of queue settings (server defaults, or a queue's
 * overrides merged over them).
 */
export function checkQueueSettings(q: QueueDefaults, name: (key: keyof QueueDefaults) => string = envOf) {
  const errors: ConfigProblem[] = [];
  const warnings: ConfigProblem[] = [];
  const err = (key: keyof QueueDefaults, rule: string) => errors.push({ setting: name(key), rule });
  const warn = (key: keyof QueueDefaults, rule: string) => warnings.push({ setting: name(key), rule });
  if (q.heartbeatMs * 2 > q.leaseMs) {
    err('heartbeatMs', `must be at most half the lease (${q.leaseMs} ms) so one late heartbeat does not lose the lease, got ${q.heartbeatMs}`);
  } else if (q.heartbeatMs * 3 > q.leaseMs) {
    warn('heartbeatMs', `is more than a third of the lease (${q.leaseMs} ms): two late beats lose the lease`);
  }
  if (q.graceMs < q.heartbeatMs) {
    err('graceMs', `must be at least the heartbeat interval (${q.heartbeatMs} ms) so a late heartbeat still wins, got ${q.graceMs}`);
  }
  if (q.graceMs > q.leaseMs * 10) warn('graceMs', `is over ten leases: dead workers' jobs wait a long time to run again`);
  if (q.timeoutMs < q.leaseMs) {
    err('timeoutMs', `must be at least the lease (${q.leaseMs} ms), got ${q.timeoutMs}`);
  } else if (q.timeoutMs > MAX_JOB_TIMEOUT_MS) {
    err('timeoutMs', `must be at most ${MAX_JOB_TIMEOUT_MS} ms (30 days): every job needs a time limit, got ${q.timeoutMs}`);
  }
  if (q.backoffMaxMs < q.backoffBaseMs) err('backoffMaxMs', `must be at least the base backoff (${q.backoffBaseMs} ms)`);
  if (q.maxLostAttempts > q.maxAttempts) {
    warn('maxLostAttempts', `is above max attempts (${q.maxAttempts}), so it never applies`);
  }
  return { errors, warnings };
}
