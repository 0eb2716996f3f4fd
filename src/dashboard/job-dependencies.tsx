/**
 * The job page's Dependencies section (docs/flows.md): what the job waits
 * for and what waits for it, one level each as GET
 * /api/v1/jobs/:id/dependencies reads it (store.jobDependencyGraph), each
 * job linked to its own page to follow the graph further. It says first
 * whether this job still waits, on how many, and what to do when a failed
 * dependency stopped it (retry that dependency, not this job). Shown only
 * for a job in a graph; each list holds at most DEPENDENCY_ROWS jobs and
 * says when there are more.
 */
import type { CascadeProgress, DependencyLink, JobDependencyGraph, JobPageView } from '../db/store/port.ts';
import { MAX_DEPENDENCIES, MAX_DEPENDENTS } from '../core/wire.ts';
import { fmtCount } from './format.ts';

/**
 * Rows per list: a job has at most MAX_DEPENDENCIES dependencies, so that
 * list is always whole; up to MAX_DEPENDENTS jobs may wait for one job, and
 * past this many the page shows the first by id and says so.
 */
export const DEPENDENCY_ROWS = MAX_DEPENDENCIES;

/** Whether the page reads the graph at all: the job waits for jobs, or jobs wait for it. */
export function inDependencyGraph(job: JobPageView): boolean {
  return job.depends_on !== null || Number(job.has_dependents) === 1;
}

/** The graph read one row past DEPENDENCY_ROWS per list, so the page can tell a full list from a cut one; and the cascade this job's failure or retry still owes. */
export async function readDependencyGraph(
  store: { jobDependencyGraph(p: { id: number; limit: number }): Promise<JobDependencyGraph>; dependencyCascadeOf(p: { jobId: number }): Promise<CascadeProgress | undefined> },
  id: number,
): Promise<JobDependencyGraph & { cascade: CascadeProgress | undefined }> {
  const [graph, cascade] = await Promise.all([store.jobDependencyGraph({ id, limit: DEPENDENCY_ROWS + 1 }), store.dependencyCascadeOf({ jobId: id })]);
  return { ...graph, cascade };
}

const CASCADE_DOING: Record<CascadeProgress['action'], string> = {
  fail: 'Settling the jobs that wait for this one, by their policies',
  retry: 'Putting back to waiting the jobs this job\'s failure settled',
  retry_jobs: 'Putting back to waiting the jobs this job\'s failure settled',
};

const EDGE_TITLES: Record<DependencyLink['state'], string> = {
  waiting: 'not completed yet: the dependent waits for it',
  completed: 'completed: met',
  failed: "failed or cancelled: the dependent failed or is held by its policy; retrying this dependency lets it wait again",
  ignored: "failed or cancelled, and counted as met: the dependent's policy is 'run'",
};

/** A job's own wait, in a few words: "waiting for 2", held or not; "no" once nothing is unmet; "—" when it waits for nothing. */
function waitText(l: { status: string; dependencyPolicy: string | null; dependenciesUnmet: number; heldAt: number | null }): string {
  if (l.dependencyPolicy === null) return '—';
  const held = l.heldAt !== null ? ' · held for a person' : '';
  if (l.status === 'pending' && l.dependenciesUnmet > 0) return `waiting for ${fmtCount(l.dependenciesUnmet)}${held}`;
  return `no${held}`;
}

/** What this job's own wait comes to, in one sentence: what the operator looks for first. */
function verdict(j: JobPageView, dependencies: DependencyLink[]): string | null {
  if (j.depends_on === null) return null;
  const policy = `policy '${j.dependency_policy ?? 'fail'}'`;
  const total = dependencies.length;
  const failedBy = j.dependency_failed_by;
  if (j.status === 'failed' && failedBy !== null) {
    // Down a chain the job that failed first is not one of this job's own dependencies: say which of them the failure came through.
    const direct = dependencies.some((d) => d.id === failedBy);
    const through = dependencies.find((d) => d.status === 'failed' || d.status === 'cancelled');
    const cause = direct || !through ? `dependency ${failedBy} failed` : `dependency ${through.id} failed after job ${failedBy} upstream`;
    return `Failed because ${cause} (${policy}). Retry job ${failedBy}, not this one: this job then waits again, and runs once all its dependencies complete.`;
  }
  if (j.status === 'pending' && j.dependencies_unmet > 0) {
    const waiting = `Waiting for ${fmtCount(j.dependencies_unmet)} of ${fmtCount(total)} dependencies (${policy}): not claimable until they complete.`;
    if (j.held_at !== null && failedBy !== null) return `${waiting} Held for a person: dependency ${failedBy} failed. Retry job ${failedBy} to let the flow go on.`;
    return waiting;
  }
  // Cancelled (or failed by hand) while it still waited: its dependencies were not all met.
  if (j.dependencies_unmet > 0) return `${fmtCount(j.dependencies_unmet)} of ${fmtCount(total)} dependencies were still unmet when it was ${j.status} (${policy}).`;
  const ignored = dependencies.filter((d) => d.state === 'ignored').length;
  // Settled edges go with their jobs when retention prunes them: none left means all were met.
  const all = total === 0 ? 'Its dependencies were all' : `All ${fmtCount(total)} dependencies`;
  const met = `${all} met${ignored > 0 ? ` (${fmtCount(ignored)} failed and counted as met under 'run')` : ''}`;
  if (j.status === 'pending') return `${met}: ${j.held_at !== null ? 'held for a person' : 'claimable'}.`;
  return `${met} (${policy}).`;
}

function LinkTable(props: { id: string; links: DependencyLink[] }) {
  return (
    <div class="table-scroll">
      <table class="dependencies" id={props.id}>
        <thead>
          <tr>
            <th>Job</th>
            <th>Queue</th>
            <th>Status</th>
            <th title="where this edge stands: waiting, completed, failed, or ignored (failed, counted as met)">Edge</th>
            <th title="the listed job's own policy for a dependency that fails: fail, hold or run; — when it waits for nothing">Its policy</th>
            <th title="whether the listed job still waits for its own dependencies, and for how many">Its wait</th>
          </tr>
        </thead>
        <tbody>
          {props.links.slice(0, DEPENDENCY_ROWS).map((l) => (
            <tr id={`${props.id}-${l.id}`}>
              <td>
                <a href={`/dashboard/jobs/${l.id}`}>{l.id}</a>
              </td>
              <td>{l.queue}</td>
              <td>
                <span class={`status ${l.status}`} title={l.lastError !== null && l.status !== 'completed' ? clip(l.lastError) : undefined}>
                  {l.status}
                </span>
              </td>
              <td title={EDGE_TITLES[l.state]}>{l.state}</td>
              <td>{l.dependencyPolicy ?? '—'}</td>
              <td>{waitText(l)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

const clip = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

/** The section; nothing for a job in no graph. Polled with the details. */
export function JobDependencies(props: { job: JobPageView; graph: JobDependencyGraph & { cascade?: CascadeProgress | undefined } }) {
  const { job: j } = props;
  const { dependencies, dependents, cascade } = props.graph;
  if (dependencies.length === 0 && dependents.length === 0 && j.depends_on === null) return null;
  const said = verdict(j, dependencies.slice(0, DEPENDENCY_ROWS));
  return (
    <section id="job-dependencies">
      <h2>Dependencies</h2>
      {cascade ? (
        <p id="dependency-cascade" class="notice">
          {CASCADE_DOING[cascade.action]}: {fmtCount(cascade.settled)} settled in {fmtCount(cascade.steps)} steps so far. A large graph is settled in bounded steps, other work running in between.
        </p>
      ) : null}
      {said !== null ? (
        <p id="dependency-wait" class={j.status === 'failed' || j.held_at !== null ? 'notice error' : undefined}>
          {said}
        </p>
      ) : null}
      {j.depends_on !== null ? (
        <>
          <h3>Waits for</h3>
          {dependencies.length === 0 ? (
            <p class="empty">None left: the jobs it waited for were pruned after they finished.</p>
          ) : (
            <LinkTable id="waits-for" links={dependencies} />
          )}
        </>
      ) : null}
      {dependents.length > 0 ? (
        <>
          <h3>Waited for by</h3>
          <LinkTable id="waited-for-by" links={dependents} />
          {dependents.length > DEPENDENCY_ROWS ? (
            <p class="hint" id="more-dependents">
              More than {fmtCount(DEPENDENCY_ROWS)} jobs wait for this one: the first {fmtCount(DEPENDENCY_ROWS)} by id are shown. GET
              /api/v1/jobs/{j.id}/dependencies lists up to {fmtCount(MAX_DEPENDENTS)}.
            </p>
          ) : null}
        </>
      ) : null}
    </section>
  );
}
