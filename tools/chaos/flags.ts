import type { CommandFlag } from '../../src/core/args.ts';

/** The flags of `npm run chaos`. */
export const CHAOS_FLAGS: CommandFlag[] = [
  { flag: '--seed', help: 'seed of the fault schedule and handler behaviours (default: random, printed)' },
  { flag: '--jobs', help: 'jobs to enqueue (default 300; 100000 with --long)' },
  { flag: '--workers', help: 'worker processes (default 4; 6 with --long)' },
  { flag: '--concurrency', help: 'slots per worker (default 4; 16 with --long)' },
  { flag: '--horizon', help: 'seconds over which faults are injected and jobs enqueued (default 20; 240 with --long)' },
  { flag: '--duration-limit', help: 'seconds the whole run may take before it stops and fails (default 150; 1200 with --long)' },
  { flag: '--json', help: 'where to write the JSON report (default: <dir>/report.json)' },
  { flag: '--dir', help: 'working directory for the database, logs and side-effect files (default: a new temp dir)' },
  { flag: '--long', help: 'the long run: 100000 jobs, longer leases, a second server, minutes', boolean: true },
  { flag: '--second-server', help: 'a second server on the same database (half the workers use it)', boolean: true },
  { flag: '--no-network-faults', help: 'leave out the network faults (one-way stalls, dropped and slow answers) and run the earlier schedule', boolean: true },
  { flag: '--no-clock-steps', help: "leave out the clock steps (the servers' lease clock stepped forward and back)", boolean: true },
  { flag: '--tolerate-unhandled-rejections', help: 'report unhandled rejections in workers as findings, not violations (see docs/chaos.md)', boolean: true },
];
