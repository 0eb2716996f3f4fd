/**
 * alertsOnce: the alert part of a maintenance pass, so alerts are remembered and
 * sent on every runtime that runs the reaper (in-process timer, Deno.cron,
 * a Workers cron, `leasehold reap`).
 *
 * 1. Evaluate, if due: at most once per `alertEveryMs` across every reaper
 *    sharing the database (the evaluation marker in alert_states), record the
 *    states, and count what started firing and what cleared.
 * 2. Notify, if LEASEHOLD_ALERT_WEBHOOK_URL is set: claim the owed
 *    notifications (a lease per row, so concurrent reapers never both send
 *    one), POST each in parallel with a timeout well inside the lease, and
 *    mark it delivered (2xx) or failed (anything else, or no answer; retried
 *    with backoff on a later pass).
 *
 * Guarantee: each transition is delivered once, unless a reaper dies (or its
 * database write fails) between the receiver's 2xx and recording it: then
 * another reaper sends the same body (same `id`) after the lease. Nothing is
 * sent for a flip that flipped back before it could be delivered.
 *
 * Never throws for a receiver's failure; a database error does throw, and
 * runMaintenancePass (pass.ts) catches it so reaping is never held up by alerts. Neither the
 * secret nor the URL (which may carry a token) is ever put in an error.
 */
import { evaluateAlerts, type Alert } from '../core/alerts.ts';
import { type AlertTransition, ALERT_SIGNATURE_HEADER, alertRetryDelayMs, alertWebhookBody, alertWebhookSignature } from '../core/alert-webhook.ts';
import type { Config } from '../core/config.ts';
import type { ClaimedNotification, JobStore, NotificationOutcome } from '../db/store/port.ts';

export interface AlertPassReport {
  /** Whether this pass evaluated the alerts (false: another pass did so within alertEveryMs). */
  evaluated: boolean;
  /** Alerts that started firing / cleared in this evaluation. */
  started: number;
  cleared: number;
  /** Webhook POSTs answered 2xx / not (to be retried). */
  delivered: number;
  failed: number;
  /** Set when the alert part itself failed (reaping was not affected). */
  error?: string;
}

/** Longest wait for the receiver; well inside NOTIFY_LEASE_MS, so a lease never runs out mid-send. */
const WEBHOOK_TIMEOUT_MS = 5_000;
/** How long a claimed notification is held by its sender. */
const NOTIFY_LEASE_MS = 30_000;
/** Notifications sent per pass at most (in parallel); the rest wait for the next pass. */
const NOTIFY_BATCH = 20;
const MAX_ERROR_CHARS = 500;

export type Fetch = (input: string, init: RequestInit) => Promise<Response>;

/** The report of a pass that did not get to alerts. */
export const NO_ALERTS_PASS: AlertPassReport = { evaluated: false, started: 0, cleared: 0, delivered: 0, failed: 0 };

/** What alertsOnce does to the store. */
export type AlertsStore = Pick<JobStore, 'metricsSnapshot' | 'alertEvaluationClaimIfDue' | 'alertStatesRecord' | 'alertNotificationsClaimDue' | 'alertNotificationsMarkIfHeld'>;

export async function alertsOnce(
  store: AlertsStore,
  at: number,
  config: Config,
  fetchFn: Fetch = fetch,
  /** Told of each alert that started firing or cleared in this evaluation (for the log). */
  onTransition?: (t: AlertTransition) => void,
): Promise<AlertPassReport> {
  const report: AlertPassReport = { evaluated: false, started: 0, cleared: 0, delivered: 0, failed: 0 };
  const evaluate = async () => evaluateAlerts(await store.metricsSnapshot({ now: at, config }));

  let alerts: Alert[] | undefined;
  if (await store.alertEvaluationClaimIfDue({ now: at, everyMs: config.alertEveryMs })) {
    alerts = await evaluate();
    const changes = await store.alertStatesRecord({ now: at, alerts });
    Object.assign(report, { evaluated: true, started: changes.started.length, cleared: changes.cleared.length });
    if (onTransition) for (const t of [...changes.started, ...changes.cleared]) onTransition(t);
  }

  const url = config.alertWebhookUrl;
  if (!url) return report;
  const owed = await store.alertNotificationsClaimDue({ now: at, leaseMs: NOTIFY_LEASE_MS, limit: NOTIFY_BATCH });
  if (owed.length === 0) return report;
  // Threshold and unit are not stored with the state: take them from this
  // pass's evaluation, or (a retry in a pass that did not evaluate) a fresh one.
  alerts ??= await evaluate();
  const scales = new Map(alerts.map((a) => [`${a.queue}\u0000${a.name}`, a]));

  const outcomes = await Promise.all(
    owed.map(async (n) => {
      const body = JSON.stringify(alertWebhookBody(n, scales.get(`${n.queue}\u0000${n.name}`), at));
      return { n, error: await post(fetchFn, url, body, config.alertWebhookSecret) };
    }),
  );
  // Every outcome recorded in one batch (one request), each under its own hold.
  await store.alertNotificationsMarkIfHeld({
    outcomes: outcomes.map(({ n, error }): NotificationOutcome => {
      if (error === null) {
        report.delivered++;
        return { ...ref(n), sent: n.state };
      }
      report.failed++;
      return { ...ref(n), error, retryAt: at + alertRetryDelayMs(n.attempts + 1) };
    }),
  });
  return report;
}

const ref = (n: ClaimedNotification) => ({ queue: n.queue, name: n.name, leaseUntil: n.leaseUntil });

/** One POST; null when the receiver answered 2xx, else why not. */
async function post(fetchFn: Fetch, url: string, body: string, secret: string | undefined): Promise<string | null> {
  const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': 'leasehold-alerts' };
  try {
    if (secret) headers[ALERT_SIGNATURE_HEADER] = await alertWebhookSignature(body, secret);
    // redirect: 'manual': a redirect is not a delivery, and the signed body stays with the configured host.
    const res = await fetchFn(url, { method: 'POST', headers, body, redirect: 'manual', signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS) });
    // The answer's body is not needed; dropping it frees the connection.
    await res.body?.cancel().catch(() => undefined);
    if (res.status >= 200 && res.status < 300) return null;
    return `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ''}`.slice(0, MAX_ERROR_CHARS);
  } catch (err) {
    // A URL parse error would quote the URL, and webhook URLs often carry a token.
    return describe(err).split(url).join('<webhook url>').slice(0, MAX_ERROR_CHARS);
  }
}

/** An error's name and message, and its cause's (fetch puts the network reason there). */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${err.name}: ${err.message}${cause}`;
}
