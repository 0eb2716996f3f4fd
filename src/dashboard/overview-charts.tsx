/** Below the overview's table: the last hour per minute, per queue, as small SVG bar charts (no script, no library). */
import { CHART_MINUTES, type ChartSeries, type QueueActivity } from './charts.ts';
import { fmtDuration, fmtOptionalDuration } from './format.ts';
import type { MetricsSnapshot } from '../db/store/port.ts';

const W = 4;
const H = 40;

/** One bar per minute with data, oldest left; heights scale to the series' busiest minute. */
function BarChart(props: { queue: string; series: ChartSeries; counts: number[] }) {
  const max = Math.max(0, ...props.counts);
  const total = props.counts.reduce((s, n) => s + n, 0);
  const label = `${props.queue}: ${total} ${props.series} in the last hour${max > 0 ? `, at most ${max} a minute` : ''}`;
  return (
    <svg class={`chart ${props.series}`} viewBox={`0 0 ${CHART_MINUTES * W} ${H}`} width={CHART_MINUTES * W} height={H} role="img" aria-label={label}>
      <title>{label}</title>
      <line class="axis" x1={0} y1={H - 0.5} x2={CHART_MINUTES * W} y2={H - 0.5} />
      {props.counts.map((n, i) => {
        if (n === 0) return null;
        const h = Math.max(1, Math.round((n / max) * (H - 2)));
        const ago = CHART_MINUTES - 1 - i;
        return (
          <rect class="bar" x={i * W} y={H - h} width={W - 1} height={h} data-minute={ago}>
            <title>{`${n} ${props.series}, ${ago === 0 ? 'in the last minute' : `${ago} min ago`}`}</title>
          </rect>
        );
      })}
    </svg>
  );
}

/**
 * The worst heartbeat lag the reaper saw in each minute, one bar per sampled
 * minute; bars over `lateMs` (two heartbeat intervals) are marked late.
 */
function LagChart(props: { queue: string; lags: (number | null)[]; lateMs: number }) {
  const max = Math.max(props.lateMs, ...props.lags.map((x) => x ?? 0));
  const worst = Math.max(0, ...props.lags.map((x) => x ?? 0));
  const sampled = props.lags.some((x) => x !== null);
  const label = sampled ? `${props.queue}: worst heartbeat lag ${fmtDuration(worst)} in the last hour` : `${props.queue}: nothing running was sampled in the last hour`;
  const lateY = H - Math.max(1, Math.round((props.lateMs / max) * (H - 2)));
  return (
    <svg class="chart lag" viewBox={`0 0 ${CHART_MINUTES * W} ${H}`} width={CHART_MINUTES * W} height={H} role="img" aria-label={label}>
      <title>{label}</title>
      <line class="axis" x1={0} y1={H - 0.5} x2={CHART_MINUTES * W} y2={H - 0.5} />
      <line class="limit" x1={0} y1={lateY} x2={CHART_MINUTES * W} y2={lateY}>
        <title>{`late: over ${fmtDuration(props.lateMs)} (two heartbeat intervals)`}</title>
      </line>
      {props.lags.map((lag, i) => {
        if (lag === null) return null;
        const h = Math.max(1, Math.round((lag / max) * (H - 2)));
        const ago = CHART_MINUTES - 1 - i;
        return (
          <rect class={lag > props.lateMs ? 'bar late' : 'bar'} x={i * W} y={H - h} width={W - 1} height={h} data-minute={ago}>
            <title>{`worst heartbeat lag ${fmtDuration(lag)}, ${ago === 0 ? 'this minute' : `${ago} min ago`}`}</title>
          </rect>
        );
      })}
    </svg>
  );
}

/** Below the overview's table: the last hour per minute, per queue. */
export function OverviewCharts(props: { m: MetricsSnapshot; activity: QueueActivity[]; shown: Set<string> }) {
  const none = new Array<number>(CHART_MINUTES).fill(0);
  const noLag = new Array<number | null>(CHART_MINUTES).fill(null);
  return (
    <>
      <h2>The last hour</h2>
      <div class="table-scroll">
      <table class="charts">
        <thead>
          <tr>
            <th>Queue</th>
            <th>Completed / min (1 h)</th>
            <th>Failed / min (1 h)</th>
            <th>Reaped / min (1 h)</th>
            <th>Worst heartbeat lag / min (1 h)</th>
            <th>Max heartbeat lag now</th>
          </tr>
        </thead>
        <tbody>
          {props.m.queues.filter((q) => props.shown.has(q.queue)).map((q) => {
            const a = props.activity.find((x) => x.queue === q.queue);
            const lag = q.running.maxHeartbeatLagMs;
            return (
              <tr id={`chart-${q.queue}`}>
                <td>{q.queue}</td>
                <td>
                  <BarChart queue={q.queue} series="completed" counts={a?.completed ?? none} />
                </td>
                <td>
                  <BarChart queue={q.queue} series="failed" counts={a?.failed ?? none} />
                </td>
                <td>
                  <BarChart queue={q.queue} series="reaped" counts={a?.reaped ?? none} />
                </td>
                <td>
                  <LagChart queue={q.queue} lags={a?.heartbeatLagMs ?? noLag} lateMs={2 * q.settings.heartbeatMs} />
                </td>
                <td class={lag !== null && lag > 2 * q.settings.heartbeatMs ? 'bad' : undefined}>
                  {fmtOptionalDuration(lag)} <span class="hint">(interval {fmtDuration(q.settings.heartbeatMs)})</span>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      </div>
    </>
  );
}
