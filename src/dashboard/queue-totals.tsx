import type { QueueHealth } from '../db/store/port.ts';
/** The overview's line of totals over every queue, whichever page of queues is shown. */

export function QueueTotals(props: { queues: QueueHealth[] }) {
  const sum = (f: (q: QueueHealth) => number) => props.queues.reduce((s, q) => s + f(q), 0);
  const n = (v: number) => v.toLocaleString('en-US');
  const expired = sum((q) => q.expiredLeases);
  const paused = sum((q) => (q.paused ? 1 : 0));
  return (
    <p class="hint queue-totals" id="queue-totals">
      All {n(props.queues.length)} {props.queues.length === 1 ? 'queue' : 'queues'}: {n(sum((q) => q.counts.pending))} pending ({n(sum((q) => q.ready))} ready) ·{' '}
      {n(sum((q) => q.counts.running))} running ·{' '}
      <span class={expired > 0 ? 'warn' : undefined}>
        {n(expired)} expired {expired === 1 ? 'lease' : 'leases'}
      </span>{' '}
      · {n(sum((q) => q.counts.completed))} completed · <span class={sum((q) => q.counts.failed) > 0 ? 'bad' : undefined}>{n(sum((q) => q.counts.failed))} failed</span> ·{' '}
      {n(sum((q) => q.counts.cancelled))} cancelled{paused > 0 ? ` · ${n(paused)} paused` : ''}
    </p>
  );
}
