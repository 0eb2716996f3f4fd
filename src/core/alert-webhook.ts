/**
 * The alert webhook's wire format: the JSON body POSTed when an alert starts
 * firing or clears, its signature, and the retry schedule. Pure (WebCrypto is
 * on every runtime); the sending is src/maintenance/alerts.ts.
 *
 * Body (`AlertWebhookBody`), one alert per POST, `content-type: application/json`:
 *
 *   {
 *     "type": "alert.firing",                 // or "alert.resolved"
 *     "id": "emails/heartbeat_lag/1893456000000", // queue/alert/since: the same on a re-send
 *     "queue": "emails", "alert": "heartbeat_lag", "state": "firing",
 *     "since": "2030-01-01T00:00:00.000Z",    // when the alert entered this state
 *     "value": 15001, "threshold": 15000, "unit": "ms",
 *     "message": "a running job has not heartbeated for 15001 ms (over 3 heartbeat intervals)",
 *     "at": "2030-01-01T00:00:05.000Z",       // when this POST was made
 *     "dashboard": "/dashboard/alerts"        // path on the leasehold server
 *   }
 *
 * Delivery is at-least-once: receivers should drop an `id` they have seen.
 * With a secret, `x-leasehold-signature: sha256=<hex>` is the HMAC-SHA256 of
 * the raw body with that secret; `at` lets a receiver refuse old replays.
 *
 * @example
 *   const body = JSON.stringify(alertWebhookBody(row, { threshold: 15000, unit: 'ms' }, now));
 *   const headers = { 'x-leasehold-signature': await alertWebhookSignature(body, secret) };
 */
import type { Alert } from './alerts.ts';

/** An alert state as recorded (src/db/store/alert-states.ts): what a notification is about. */
export interface AlertTransition {
  queue: string;
  name: Alert['name'];
  state: Alert['state'];
  /** Epoch ms the alert entered `state`. */
  since: number;
  value: number | null;
  message: string;
}

interface AlertWebhookBody {
  type: 'alert.firing' | 'alert.resolved';
  id: string;
  queue: string;
  alert: Alert['name'];
  state: Alert['state'];
  since: string;
  value: number | null;
  /** From the latest evaluation of this alert; null if the alert is no longer evaluated. */
  threshold: number | null;
  unit: Alert['unit'] | null;
  message: string;
  at: string;
  dashboard: '/dashboard/alerts';
}

export const ALERT_SIGNATURE_HEADER = 'x-leasehold-signature';

/** `scale`: the alert's latest threshold and unit (not stored with its state). */
export function alertWebhookBody(t: AlertTransition, scale: Pick<Alert, 'threshold' | 'unit'> | undefined, at: number): AlertWebhookBody {
  return {
    type: t.state === 'firing' ? 'alert.firing' : 'alert.resolved',
    id: `${t.queue}/${t.name}/${t.since}`,
    queue: t.queue,
    alert: t.name,
    state: t.state,
    since: new Date(t.since).toISOString(),
    value: t.value,
    threshold: scale?.threshold ?? null,
    unit: scale?.unit ?? null,
    message: t.message,
    at: new Date(at).toISOString(),
    dashboard: '/dashboard/alerts',
  };
}

/** The signature header's value: `sha256=` + hex HMAC-SHA256 of `body` (the exact bytes sent). */
export async function alertWebhookSignature(body: string, secret: string): Promise<string> {
  const enc = new TextEncoder();
  const key = await crypto.subtle.importKey('raw', enc.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, enc.encode(body)));
  return `sha256=${Array.from(mac, (b) => b.toString(16).padStart(2, '0')).join('')}`;
}

const ALERT_RETRY_BASE_MS = 10_000;
const ALERT_RETRY_MAX_MS = 10 * 60_000;

/**
 * How long after its `failures`-th failed attempt a notification is tried
 * again: 10 s, doubling, at most 10 minutes. It is retried until delivered or
 * until the alert returns to the state last delivered (then nothing is owed).
 */
export function alertRetryDelayMs(failures: number): number {
  return Math.min(ALERT_RETRY_MAX_MS, ALERT_RETRY_BASE_MS * 2 ** Math.min(Math.max(failures - 1, 0), 16));
}
