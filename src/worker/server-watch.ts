/**
 * Whether the server answers, as the worker's own calls find it: one warning
 * when calls start failing, one line when one gets through again, and the
 * failures in between at debug. A server that is down for a minute used to
 * cost a warning per heartbeat and per claim retry, each repeating the same
 * error text; what an operator needs is when it went away, why, and when it
 * came back.
 *
 * The counters and events stay per call (`heartbeatFailures`,
 * `heartbeat_failed`, `error`): only the log is folded.
 */
import type { LogFields } from './types.ts';

type Logs = { warn(m: string, f?: LogFields): void; info(m: string, f?: LogFields): void; debug(m: string, f?: LogFields): void };

export type ServerWatch = ReturnType<typeof createServerWatch>;

export function createServerWatch(logger: Logs, now: () => number) {
  /** Local time of the first failure of the current outage; undefined while calls get through. */
  let downSince: number | undefined;
  let failures = 0;
  return {
    /** A call failed: `message` says which and why. Logged as a warning only when it starts an outage. */
    failed(message: string, fields: LogFields) {
      failures++;
      if (downSince !== undefined) {
        logger.debug(message, { ...fields, failures });
        return;
      }
      downSince = now();
      logger.warn(`${message}: calls to the server are failing; the worker keeps trying, and says so again when one gets through (the failures in between are logged at debug)`, fields);
    },
    /** A call got through: ends the outage, if there was one, with one line. */
    answered(call: string) {
      if (downSince === undefined) return;
      const downMs = Math.round(now() - downSince);
      logger.info(`server answers again: a ${call} got through after ${failures} failed call${failures === 1 ? '' : 's'} over ${(downMs / 1000).toFixed(1)} s`, { failures, downMs });
      downSince = undefined;
      failures = 0;
    },
  };
}
