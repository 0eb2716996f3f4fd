/**
 * The queue page's Groups section: the queue's per-group limits, and its
 * busiest groups (GROUPS_SHOWN, by pending + running) with their pending and
 * running jobs, every other group summed in one "other" row, so the table
 * stays short whatever the number of tenants. Read from job_groups (store
 * queuesGroupCounts); polled (/dashboard/live/queues/:queue/groups).
 * Shown only for a queue with groups or a group limit.
 */
import { fmtCount, fmtDuration } from './format.ts';
import type { QueueGroupCounts, QueueHealth } from '../db/store/port.ts';

/** How many groups the queue page names; the rest are one row. */
export const GROUPS_SHOWN = 10;

/** Whether the queue page has a Groups section: the queue has groups with work, or a group limit to show. */
export function hasGroupsSection(q: QueueHealth, counts: QueueGroupCounts | undefined): boolean {
  return counts !== undefined || q.groupMaxRunning !== null || q.groupRateLimit !== null;
}

export function GroupsFragment(props: { q: QueueHealth; counts: QueueGroupCounts | undefined }) {
  const { q, counts } = props;
  const cap = q.groupMaxRunning;
  const running = (n: number) => (cap === null ? fmtCount(n) : `${fmtCount(n)} of at most ${fmtCount(cap)}`);
  return (
    <>
      <p class="hint" id="queue-group-limits">
        {cap === null ? 'No limit on running jobs per group' : `At most ${cap} running jobs per group (groupMaxRunning)`}
        {q.groupRateLimit === null ? '' : `; at most ${q.groupRateLimit.max} claims per group in any ${fmtDuration(q.groupRateLimit.windowMs)} (groupRateLimit)`}. Claims take turns
        across groups, the least recently served first.
      </p>
      {counts === undefined ? (
        <p class="empty">No group has pending or running jobs.</p>
      ) : (
        <div class="table-scroll">
          <table class="groups" id="queue-groups">
            <caption>
              {counts.top.length === counts.groups ? `All ${fmtCount(counts.groups)}` : `The ${counts.top.length} busiest of ${fmtCount(counts.groups)}`}{' '}
              {counts.groups === 1 ? 'group' : 'groups'} with pending or running jobs
            </caption>
            <thead>
              <tr>
                <th>group</th>
                <th>pending</th>
                <th>running</th>
              </tr>
            </thead>
            <tbody>
              {counts.top.map((g) => (
                <tr>
                  <td class="group">{g.group}</td>
                  <td>{fmtCount(g.pending)}</td>
                  <td class={cap !== null && g.running >= cap ? 'bad' : undefined}>{running(g.running)}</td>
                </tr>
              ))}
              {counts.other.groups > 0 ? (
                <tr class="other" id="queue-groups-other">
                  <td>
                    other ({fmtCount(counts.other.groups)} {counts.other.groups === 1 ? 'group' : 'groups'})
                  </td>
                  <td>{fmtCount(counts.other.pending)}</td>
                  <td>{fmtCount(counts.other.running)}</td>
                </tr>
              ) : null}
            </tbody>
          </table>
        </div>
      )}
    </>
  );
}
