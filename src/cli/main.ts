#!/usr/bin/env node
/**
 * The `leasehold` command: serve, migrate, reap, enqueue, stats, backup, doctor, work,
 * and the operator's jobs, queues, workers and tuning (against a running server).
 * Every server setting is also a flag (see `leasehold serve --help`).
 *
 * The server, the database client and Drizzle are imported by the commands
 * that use them, not here: `--help`, `--version` and every command that talks
 * to a server load none of them.
 *
 * A command that touches data (enqueue, stats, reap) uses the server when a
 * URL is given (--url or LEASEHOLD_URL), otherwise the configured database,
 * and says which on stderr.
 */
import { ConfigError, loadConfig, SETTINGS, type Config } from '../core/config.ts';
import { databaseClock } from '../core/clock.ts';
import { LeaseholdError } from '../core/errors.ts';
import { StartupError } from '../core/startup-error.ts';
import { VERSION } from '../version.ts';
import { splitFlags, UsageError, type CommandFlag } from '../core/args.ts';
import { WORK_DETAILS, WORK_FLAGS, workCommand } from './work.ts';
import { BACKUP_DETAILS, BACKUP_FLAGS, backupCommand } from './backup.ts';
import { DOCTOR_FLAGS, doctorCommand } from './doctor.ts';
import { redactUrl } from '../core/redact.ts';
import { AUDIT_FLAGS, auditCommand } from './audit.ts';
import { SCHEDULES_DETAILS, SCHEDULES_FLAGS, schedulesCommand } from './schedules.ts';
import { JOBS_DETAILS, JOBS_FLAGS, jobsCommand, queueTable, QUEUES_DETAILS, QUEUES_FLAGS, queuesCommand, WORKERS_FLAGS, workersCommand } from './ops.ts';
import { TUNING_DETAILS, TUNING_FLAGS, tuningCommand } from './tuning.ts';
import { errorLine, LeaseholdApiError, LeaseholdNetworkError, serverApi, URL_FLAG, urlGiven } from './server-api.ts';

interface Command {
  summary: string;
  flags: CommandFlag[];
  /** Usage of what follows `--`, for commands that take one. */
  trailing?: string;
  /** More help, after the summary. */
  details?: string;
  /** Usage of the words the command takes (`jobs show ID`); without it, it takes none. */
  words?: string;
  run(config: Config, flags: Map<string, string | true>, trailing: string[], words: string[]): Promise<number | 'keep-running'>;
}

/** Says on stderr which database a command works on, and how to use a server instead. */
function usingDatabase(command: string, config: Config) {
  console.error(`leasehold ${command}: database ${redactUrl(config.databaseUrl)} (no --url or LEASEHOLD_URL given)`);
}

/** The server a data command was pointed at (--url or LEASEHOLD_URL), said on stderr; undefined: use the database. */
function givenServer(command: string, config: Config, flags: Map<string, string | true>, token = config.adminToken) {
  const url = urlGiven(flags);
  if (url === undefined) return undefined;
  console.error(`leasehold ${command}: server ${redactUrl(url)}`);
  return serverApi(url, token);
}

const SETTINGS_HELP = SETTINGS.map((s) => `  ${s.flag.padEnd(26)} ${s.env.padEnd(32)} ${s.help}${s.default !== undefined && s.kind !== 'secret' ? ` (default ${s.default})` : ''}`).join('\n');

const COMMANDS: Record<string, Command> = {
  serve: {
    summary: 'Run the server, API and in-process reaper (default command)',
    flags: [],
    async run(config) {
      const { startServer, serverLogger } = await import('../runtime/node.ts');
      const log = serverLogger(config);
      const server = await startServer(config, { log });
      const stop = async (signal: string) => {
        log.info(`leasehold: ${signal}, shutting down`, { event: 'shutdown', signal });
        await server.close();
        process.exit(0);
      };
      process.once('SIGTERM', () => void stop('SIGTERM'));
      process.once('SIGINT', () => void stop('SIGINT'));
      return 'keep-running';
    },
  },
  migrate: {
    summary: 'Apply the database migrations and exit',
    flags: [],
    async run(config) {
      const { openDatabase } = await import('../runtime/node.ts');
      const opened = await openDatabase(config);
      opened.close();
      console.log(`leasehold: migrations applied to ${redactUrl(config.databaseUrl)}`);
      return 0;
    },
  },
  reap: {
    summary: 'Run one reaper pass (for an external cron) and print what it did',
    flags: [{ flag: '--json', help: 'print the full report as JSON', boolean: true }, URL_FLAG],
    async run(config, flags) {
      const server = givenServer('reap', config, flags);
      if (server) {
        const report = await server.post('/reaper/run');
        const { summarize } = await import('../runtime/reaper-timer.ts');
        console.log(flags.has('--json') ? JSON.stringify(report, null, 2) : `reaper: ${summarize(report)}`);
        return 0;
      }
      usingDatabase('reap', config);
      const [{ openDatabase, summarize }, { runMaintenancePass }] = await Promise.all([import('../runtime/node.ts'), import('../maintenance/pass.ts')]);
      const opened = await openDatabase(config);
      try {
        const report = await runMaintenancePass(opened.db, databaseClock.now(), config);
        console.log(flags.has('--json') ? JSON.stringify(report, null, 2) : `reaper: ${summarize(report)}`);
      } finally {
        opened.close();
      }
      return 0;
    },
  },
  enqueue: {
    summary: 'Add a job to a queue: through the server with --url, else straight into the database',
    flags: [
      { flag: '--queue', help: 'queue name (required)' },
      { flag: '--payload', help: 'JSON payload (default {})' },
      { flag: '--idempotency-key', help: 'unique per queue: a duplicate returns the existing job' },
      { flag: '--priority', help: 'higher runs first (default 0)' },
      { flag: '--delay-ms', help: 'run no earlier than this many ms from now' },
      { flag: '--max-attempts', help: 'attempts before the job fails for good' },
      { flag: '--timeout-ms', help: 'hard deadline per attempt' },
      URL_FLAG,
    ],
    async run(config, flags) {
      const queue = flags.get('--queue');
      if (typeof queue !== 'string') throw new UsageError('--queue is required');
      let payload: unknown = {};
      const text = flags.get('--payload');
      if (typeof text === 'string') {
        try {
          payload = JSON.parse(text);
        } catch {
          throw new UsageError('--payload must be JSON');
        }
      }
      const num = (flag: string) => {
        const v = flags.get(flag);
        if (v === undefined) return undefined;
        if (typeof v !== 'string' || !/^-?\d+$/.test(v)) throw new UsageError(`${flag} must be a whole number`);
        return Number(v);
      };
      const key = flags.get('--idempotency-key');
      const job = { payload, idempotencyKey: typeof key === 'string' ? key : undefined, priority: num('--priority'), delayMs: num('--delay-ms'), maxAttempts: num('--max-attempts'), timeoutMs: num('--timeout-ms') };
      const server = givenServer('enqueue', config, flags, config.adminToken ?? config.workerToken);
      if (server) {
        const answer = await server.post(`/queues/${encodeURIComponent(queue)}/jobs`, job);
        console.log(JSON.stringify({ job: answer.job, deduplicated: answer.deduplicated === true }, null, 2));
        return 0;
      }
      usingDatabase('enqueue', config);
      const [{ openDatabase }, { createStore }, { toJob }] = await Promise.all([import('../runtime/node.ts'), import('../db/store/create-store.ts'), import('../core/job-record.ts')]);
      const opened = await openDatabase(config);
      try {
        const [result] = await createStore(opened.db).jobsInsert({
          queue,
          jobs: [job],
          actor: 'cli',
          now: databaseClock.now(),
          defaults: config,
          maxQueues: config.maxQueues,
        });
        console.log(JSON.stringify({ job: toJob(result!.job), deduplicated: result!.deduplicated }, null, 2));
      } finally {
        opened.close();
      }
      return 0;
    },
  },
  stats: {
    summary: 'Print counts and health per queue',
    flags: [{ flag: '--json', help: 'print JSON', boolean: true }, URL_FLAG],
    async run(config, flags) {
      const server = givenServer('stats', config, flags);
      if (server) {
        const { queues } = await server.get<{ queues: any[] }>('/queues');
        console.log(flags.has('--json') ? JSON.stringify(queues, null, 2) : queues.length === 0 ? '(no queues yet)' : queueTable(queues));
        return 0;
      }
      usingDatabase('stats', config);
      const [{ openDatabase }, { createStore }] = await Promise.all([import('../runtime/node.ts'), import('../db/store/create-store.ts')]);
      const opened = await openDatabase(config);
      try {
        const queues = await createStore(opened.db).queuesHealth({ now: databaseClock.now(), defaults: config });
        if (flags.has('--json')) {
          console.log(JSON.stringify(queues, null, 2));
          return 0;
        }
        const header = ['queue', 'pending', 'ready', 'running', 'expired', 'completed', 'failed', 'cancelled', 'paused'];
        const rows = queues.map((q) => [q.name, q.counts.pending, q.ready, q.counts.running, q.expiredLeases, q.counts.completed, q.counts.failed, q.counts.cancelled, q.paused ? 'yes' : 'no'].map(String));
        const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
        for (const row of [header, ...rows]) console.log(row.map((cell, i) => cell.padEnd(widths[i]!)).join('  '));
        if (queues.length === 0) console.log('(no queues yet)');
      } finally {
        opened.close();
      }
      return 0;
    },
  },
  backup: {
    summary: 'Copy the live database into FILE as one consistent snapshot',
    words: 'FILE',
    flags: BACKUP_FLAGS,
    details: BACKUP_DETAILS,
    run: (config, flags, _trailing, words) => backupCommand(config, flags, words[0]),
  },
  doctor: {
    summary: 'Check the database and settings: integrity, migrations, lease rules, stuck leases, size',
    flags: DOCTOR_FLAGS,
    run: (config, flags) => doctorCommand(config, flags),
  },
  jobs: {
    summary: 'List, show, retry, cancel or requeue jobs, one or in bulk, or redrive dead letters, on a running server',
    flags: JOBS_FLAGS,
    words: 'list | show ID | dependencies ID | retry|cancel|requeue [ID] | redrive',
    details: JOBS_DETAILS,
    run: (config, flags, _trailing, words) => jobsCommand(config, flags, words),
  },
  queues: {
    summary: 'List queues, show one, pause, resume, or change its settings, on a running server',
    flags: QUEUES_FLAGS,
    words: '[list | show Q | pause Q | resume Q | settings Q [key=value ...]]',
    details: QUEUES_DETAILS,
    run: (config, flags, _trailing, words) => queuesCommand(config, flags, words),
  },
  schedules: {
    summary: 'Recurring jobs on a running server: list, show, add, pause, resume, delete',
    flags: SCHEDULES_FLAGS,
    words: '[list | show N | add N | pause N | resume N | delete N]',
    details: SCHEDULES_DETAILS,
    run: (config, flags, _trailing, words) => schedulesCommand(config, flags, words),
  },
  workers: {
    summary: 'The worker registry of a running server: alive or not, last seen, jobs held',
    flags: WORKERS_FLAGS,
    words: '',
    run: (config, flags, _trailing, words) => workersCommand(config, flags, words),
  },
  tuning: {
    summary: "What-if tuning on a running server: a queue's evidence replayed against its lease and grace today and a candidate",
    flags: TUNING_FLAGS,
    words: 'what-if',
    details: TUNING_DETAILS,
    run: (config, flags, _trailing, words) => tuningCommand(config, flags, words),
  },
  audit: {
    summary: 'Who changed what on a running server, newest first: settings, pauses, thresholds, bulk and job actions, logins',
    flags: AUDIT_FLAGS,
    words: '',
    run: (config, flags, _trailing, words) => auditCommand(config, flags, words),
  },
  work: {
    summary: 'Run a command per job (payload as JSON on stdin), heartbeating while it runs',
    flags: WORK_FLAGS,
    trailing: '-- CMD [ARGS...]',
    details: WORK_DETAILS,
    run: workCommand,
  },
};

function usage(): string {
  return `usage: leasehold <command> [flags]\n\ncommands:\n${Object.entries(COMMANDS)
    .map(([name, c]) => `  ${name.padEnd(10)} ${c.summary}`)
    .join('\n')}\n\n'leasehold <command> --help' lists a command's flags; 'leasehold --version' prints the version.`;
}

function commandHelp(name: string, c: Command): string {
  const own = c.flags.map((f) => `  ${f.flag.padEnd(26)} ${f.help}`).join('\n');
  return `usage: leasehold ${name}${c.words ? ` ${c.words}` : ''} [flags]${c.trailing ? ` ${c.trailing}` : ''}\n\n${c.summary}.\n${c.details ? `\n${c.details}\n` : ''}${own ? `\nflags:\n${own}\n` : ''}\nsettings (flag, environment variable, meaning):\n${SETTINGS_HELP}`;
}

async function main(argv: string[]): Promise<number | 'keep-running'> {
  const [first, ...rest] = argv;
  if (first === undefined || first.startsWith('-')) {
    if (first === '--help' || first === '-h') {
      console.log(usage());
      return 0;
    }
    if (first === '--version' || first === '-v') {
      console.log(VERSION);
      return 0;
    }
    return main(['serve', ...argv]);
  }
  if (first === 'version') {
    console.log(VERSION);
    return 0;
  }
  if (first === 'help') {
    console.log(usage());
    return 0;
  }
  const command = COMMANDS[first];
  if (!command) {
    console.error(`leasehold: unknown command ${JSON.stringify(first)}\n\n${usage()}`);
    return 2;
  }
  // Everything after `--` belongs to the command (`work`), not to leasehold.
  const dash = rest.indexOf('--');
  const own = dash === -1 ? rest : rest.slice(0, dash);
  const trailing = dash === -1 ? [] : rest.slice(dash + 1);
  if (own.includes('--help') || own.includes('-h')) {
    console.log(commandHelp(first, command));
    return 0;
  }
  try {
    if (dash !== -1 && !command.trailing) throw new UsageError('takes no arguments after --');
    const { values, rest: settingFlags, positionals } = splitFlags(own, command.flags, {
      positionals: command.words !== undefined,
      valueFlags: new Set(SETTINGS.map((s) => s.flag)),
    });
    const { config, warnings, derived } = loadConfig(process.env, settingFlags);
    for (const d of derived) console.error(`leasehold: ${d.setting} ${d.rule}`);
    for (const w of warnings) console.warn(`leasehold: warning: ${w.setting} ${w.rule}`);
    return await command.run(config, values, trailing, positionals);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.startupMessage());
      return 2;
    }
    if (err instanceof StartupError) {
      console.error(err.message);
      return 1;
    }
    // What the server said, as one line with its code: the server decided, nothing more to show.
    if (err instanceof LeaseholdApiError || err instanceof LeaseholdNetworkError) {
      console.error(`leasehold ${first}: ${errorLine(err)}`);
      return 1;
    }
    if (err instanceof UsageError || err instanceof LeaseholdError) {
      console.error(`leasehold ${first}: ${err.message}`);
      return 2;
    }
    throw err;
  }
}

const code = await main(process.argv.slice(2));
if (code !== 'keep-running') process.exitCode = code;
