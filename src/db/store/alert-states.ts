/**
 * Remembered alert states (the alert_states table, drizzle/0004), so the
 * reaper can tell "started firing" and "cleared" from "still firing", and owe
 * the webhook exactly those transitions. One row per queue and alert.
 *
 * - state / since: the last evaluation's verdict, and when it last flipped.
 * - notified_state: the state the webhook receiver last acknowledged. A row
 *   with notified_state <> state owes one notification: `alert.firing` when
 *   state is 'firing', `alert.resolved` when it is 'ok'. A new alert starts
 *   at 'ok', so a new alert that is ok owes nothing; if an alert flips and
 *   flips back before it was delivered, nothing is owed either.
 * - notify_until: a sending reaper's lease on the row (or, after a failure,
 *   when to try again). A claim takes only rows past it; every later write is
 *   guarded by the exact value the claim set, so a reaper whose lease ran out
 *   cannot overwrite the next one's outcome.
 *
 * One more row, queue '' (no queue can be named that) and name 'evaluation',
 * is not an alert: its updated_at is when alerts were last evaluated, and
 * `alertEvaluationClaimIfDue` advances it in one guarded upsert, so of the
 * reapers sharing a database only one evaluates per `everyMs`. It is always
 * ok and notified ok, so it is never sent; `alertStatesList` leaves it out.
 *
 * Costs: the table holds six rows per queue; every statement here scans it.
 */
import { asc, ne, sql } from 'drizzle-orm';
import type { Alert } from '../../core/alerts.ts';
import type { AlertTransition } from '../../core/alert-webhook.ts';
import { batchList, type Db } from '../db.ts';
import { alertStates } from '../schema.ts';
import type { AlertStateChanges, AlertStateRow, ClaimedNotification, NotificationOutcome, NotificationRef } from './port-types.ts';

const EVALUATION_QUEUE = '';
const EVALUATION_NAME = 'evaluation';
const IS_ALERT = sql`queue_name <> ${EVALUATION_QUEUE}`;

/**
 * Precondition: no evaluation was claimed in the last `everyMs` (the marker
 * row's updated_at <= now - everyMs, or no marker yet).
 * Postcondition: the marker says `now`. True: this caller evaluates; false
 * (no row back): another reaper did so recently. A clock that moves back
 * delays evaluation until it passes the marker again.
 */
export async function alertEvaluationClaimIfDue(db: Db, p: { now: number; everyMs: number }): Promise<boolean> {
  const rows = await db.all<{ at: number }>(sql`INSERT INTO alert_states (queue_name, name, state, since, message, updated_at)
    VALUES (${EVALUATION_QUEUE}, ${EVALUATION_NAME}, 'ok', ${p.now}, 'not an alert: when alerts were last evaluated', ${p.now})
    ON CONFLICT (queue_name, name) DO UPDATE SET updated_at = excluded.updated_at
      WHERE alert_states.updated_at <= excluded.updated_at - ${p.everyMs}
    RETURNING updated_at AS at`);
  return rows.length > 0;
}

/**
 * Stores one evaluation. Every alert given is upserted with `since` = now
 * when its state differs from the stored one (or it is new), kept otherwise;
 * an alert firing before but absent from `alerts` (its queue or its check
 * gone) becomes ok. One batch (one transaction): the read of the states
 * before, which the changes are computed from, sees exactly what the writes
 * replace.
 */
export async function alertStatesRecord(db: Db, p: { now: number; alerts: readonly Alert[] }): Promise<AlertStateChanges> {
  // One JSON parameter, not seven per alert: D1 allows at most 100 bound parameters per statement.
  const json = JSON.stringify(p.alerts.map((a) => ({ q: a.queue, n: a.name, s: a.state, v: a.value, m: a.message })));
  const rows = sql`(SELECT j.value ->> '$.q' AS q, j.value ->> '$.n' AS n, j.value ->> '$.s' AS s, j.value ->> '$.v' AS v, j.value ->> '$.m' AS m
    FROM json_each(${json}) AS j)`;
  const gone = 'no longer evaluated';
  const [before] = await batchList(db, [
    db.all<{ queue: string; name: Alert['name']; state: Alert['state'] }>(
      sql`SELECT queue_name AS queue, name, state FROM alert_states WHERE ${IS_ALERT}`,
    ),
    // WHERE true: without it SQLite would read ON CONFLICT as a join's ON.
    db.run(sql`INSERT INTO alert_states (queue_name, name, state, since, value, message, updated_at)
      SELECT r.q, r.n, r.s, ${p.now}, r.v, r.m, ${p.now} FROM ${rows} AS r WHERE true
      ON CONFLICT (queue_name, name) DO UPDATE SET
        since = CASE WHEN alert_states.state = excluded.state THEN alert_states.since ELSE excluded.since END,
        state = excluded.state, value = excluded.value, message = excluded.message, updated_at = excluded.updated_at`),
    db.run(sql`UPDATE alert_states SET state = 'ok', since = ${p.now}, value = NULL, message = ${gone}, updated_at = ${p.now}
      WHERE ${IS_ALERT} AND state = 'firing' AND (queue_name, name) NOT IN (SELECT r.q, r.n FROM ${rows} AS r)`),
  ]);
  const prior = new Map((before as { queue: string; name: string; state: Alert['state'] }[]).map((r) => [`${r.queue}\u0000${r.name}`, r]));
  const changes: AlertStateChanges = { started: [], cleared: [] };
  for (const a of p.alerts) {
    const key = `${a.queue}\u0000${a.name}`;
    const was = prior.get(key)?.state ?? 'ok';
    prior.delete(key);
    if (was === a.state) continue;
    const t: AlertTransition = { queue: a.queue, name: a.name, state: a.state, since: p.now, value: a.value, message: a.message };
    (a.state === 'firing' ? changes.started : changes.cleared).push(t);
  }
  for (const r of prior.values()) {
    if (r.state === 'firing') changes.cleared.push({ queue: r.queue, name: r.name as Alert['name'], state: 'ok', since: p.now, value: null, message: gone });
  }
  return changes;
}

/** Every stored alert state (not the evaluation marker), by queue and name. */
export function alertStatesList(db: Db): Promise<AlertStateRow[]> {
  const a = alertStates;
  return db
    .select({
      queue: a.queueName,
      name: sql<Alert['name']>`${a.name}`,
      state: a.state,
      since: a.since,
      value: a.value,
      message: a.message,
      notifiedState: a.notifiedState,
      notifyUntil: a.notifyUntil,
      notifyAttempts: a.notifyAttempts,
      lastNotifyError: a.lastNotifyError,
      updatedAt: a.updatedAt,
    })
    .from(a)
    .where(ne(a.queueName, EVALUATION_QUEUE))
    .orderBy(asc(a.queueName), asc(a.name));
}

/**
 * Precondition: the row owes a notification (notified_state <> state) and no
 * one holds it (notify_until is null or past).
 * Postcondition: up to `limit` such rows are held until now + leaseMs.
 * No rows back: nothing is owed, or other reapers hold it. One
 * UPDATE ... WHERE rowid IN (SELECT ... LIMIT n) RETURNING: two reapers never
 * hold the same row.
 */
export async function alertNotificationsClaimDue(db: Db, p: { now: number; leaseMs: number; limit: number }): Promise<ClaimedNotification[]> {
  const owed = sql`${IS_ALERT} AND notified_state <> state AND (notify_until IS NULL OR notify_until <= ${p.now})`;
  return db.all<ClaimedNotification>(sql`UPDATE alert_states SET notify_until = ${p.now + p.leaseMs}
    WHERE rowid IN (SELECT rowid FROM alert_states WHERE ${owed} ORDER BY since LIMIT ${p.limit}) AND ${owed}
    RETURNING queue_name AS queue, name, state, since, value, message, notify_until AS leaseUntil, notify_attempts AS attempts`);
}

/**
 * Precondition: the caller still holds the row (notify_until = its lease).
 * Postcondition: notified_state is the state that was sent, whatever the
 * state is now: if the alert flipped while the POST was in flight, the flip
 * is owed next (a guard on the state would lose it: a firing sent and
 * never resolved). No row back: the lease was lost to another reaper,
 * which sends its own copy. A statement: await it, or batch it.
 */
export function alertNotificationMarkDeliveredIfHeld(db: Db, p: NotificationRef & { sent: Alert['state'] }) {
  return db.all<{ name: string }>(sql`UPDATE alert_states
    SET notified_state = ${p.sent}, notify_until = NULL, notify_attempts = 0, last_notify_error = NULL
    WHERE queue_name = ${p.queue} AND name = ${p.name} AND notify_until = ${p.leaseUntil} RETURNING name`);
}

/**
 * Precondition: the caller still holds the row.
 * Postcondition: one more failed attempt, its error, and no claim before
 * `retryAt`. No row back: the lease was lost; the holder decides. A
 * statement: await it, or batch it.
 */
export function alertNotificationMarkFailedIfHeld(db: Db, p: NotificationRef & { error: string; retryAt: number }) {
  return db.all<{ name: string }>(sql`UPDATE alert_states
    SET notify_attempts = notify_attempts + 1, last_notify_error = ${p.error}, notify_until = ${p.retryAt}
    WHERE queue_name = ${p.queue} AND name = ${p.name} AND notify_until = ${p.leaseUntil} RETURNING name`);
}

/**
 * Every outcome of a pass's POSTs in one batch (one request), each the
 * statement above under its own hold. Returns, per outcome in order, whether
 * this caller still held the notification.
 */
export async function alertNotificationsMarkIfHeld(db: Db, p: { outcomes: readonly NotificationOutcome[] }): Promise<boolean[]> {
  const results = await batchList(
    db,
    p.outcomes.map((o) => ('sent' in o ? alertNotificationMarkDeliveredIfHeld(db, o) : alertNotificationMarkFailedIfHeld(db, o))),
  );
  return results.map((rows) => (rows as unknown[]).length > 0);
}
