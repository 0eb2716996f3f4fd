/**
 * The short chaos run (tools/chaos): a real server and four real worker
 * processes on loopback, 300 jobs, every kind of fault on a fixed seed. It
 * must end with no violation, and every kind of fault must really have happened.
 *
 * The harness runs as its own process group, so that whatever happens here
 * (a timeout included) every server and worker it started is killed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';

const MAIN = join(import.meta.dirname, '..', '..', 'tools', 'chaos', 'main.ts');
const dir = mkdtempSync(join(tmpdir(), 'leasehold-chaos-test-'));
let pgid: number | undefined;

afterAll(() => {
  if (pgid !== undefined) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

test('chaos, short version (seed 42): no violations, and every kind of fault happened', { timeout: 240_000 }, async () => {
  const reportPath = join(dir, 'report.json');
  // Without --tolerate-unhandled-rejections: a worker that dies of an unhandled
  // rejection (as the SDK's liveness beat once did when its server went away) fails the run.
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, '--seed', '42', '--dir', dir, '--json', reportPath, '--duration-limit', '200'], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  pgid = child.pid;
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));

  expect(code, output.slice(-6_000)).toBe(0);
  const report = JSON.parse(readFileSync(reportPath, 'utf8'));
  expect(report.violations).toEqual([]);
  expect(report.ok).toBe(true);
  expect(report.jobs.total).toBe(300);
  expect(report.jobs.completed + report.jobs.failed).toBe(300);

  // Every kind of fault was injected, and did what it is for.
  for (const kind of ['kill_worker', 'stop_worker', 'partition_stall', 'partition_drop', 'kill_server', 'stop_server', 'partition_stall_requests', 'partition_stall_answers', 'drop_answers', 'slow_answers', 'clock_step']) {
    expect(report.faults.injected[kind] ?? 0, kind).toBeGreaterThan(0);
  }
  // Each clock step has a forward step (first, or on its way back); none handed a live job away (a violation otherwise).
  expect(report.clockSteps).toMatchObject({ forward: 2, takenFromLiveOwners: 0 });
  // Answers were really lost after the server acted, and none left a job for the reaper.
  expect(Object.values(report.lostAnswers.dropped as Record<string, number>).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  expect(report.lostAnswers.waitedForReaper).toBe(0);
  expect(report.faults.killsMidJob).toBeGreaterThan(0);
  expect(report.serverStarts[0]).toBeGreaterThan(1);
  for (const behaviour of ['normal', 'block', 'block_past_lease', 'hang_io', 'throw_once', 'fatal', 'long', 'long_ignores_signal']) {
    expect(report.behavioursRun[behaviour] ?? 0, behaviour).toBeGreaterThan(0);
  }
  expect(report.reapedBy.reaped_due_to_expired_lease ?? 0).toBeGreaterThan(0);
  expect(report.workerEvents.lease_lost ?? 0).toBeGreaterThan(0);
  expect(report.workerEvents.event_loop_blocked ?? 0).toBeGreaterThan(0);
  // The operator's actions happened: jobs with onLost 'hold' were held after a
  // lost attempt and run again only after a release (the verdict checks each
  // claim), and canary requeues took lost jobs in watched steps.
  // (Which canary step wins a job from the reaper depends on the machine's
  // timing: each run must have taken or skipped its jobs and ended.)
  const operator = JSON.stringify({ held: report.held, operator: report.operator });
  expect(report.held.jobsHeld, operator).toBeGreaterThan(0);
  expect(report.held.releasedByOperator, operator).toBeGreaterThan(0);
  const canary = report.operator.canary;
  expect(canary.started, operator).toBeGreaterThan(0);
  expect(canary.requeued + canary.skipped + canary.failedForGood, operator).toBeGreaterThan(0);
  expect(canary.states.watching ?? 0, operator).toBe(0);
  expect(canary.errors, operator).toEqual([]);
  // The once() effect of every completed job is in exactly one worker's file
  // (violations would list any other outcome).
  expect(report.once.jobsApplied).toBeGreaterThanOrEqual(report.jobs.completed);
  expect(output).toContain(`fault schedule (${report.plan.faults.length} faults, hash ${report.plan.faultsHash})`);
});
