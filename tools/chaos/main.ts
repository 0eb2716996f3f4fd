/**
 * `npm run chaos`: the fault-injection run. Exits 0 when
 * every check holds, 1 on any violation, 2 on bad flags.
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { splitFlags } from '../../src/core/args.ts';
import { CHAOS_FLAGS } from './flags.ts';
import { runChaos } from './harness.ts';
import { LONG_TIMINGS, SHORT_TIMINGS, type ChaosOptions } from './plan.ts';

/** The chaos flags, parsed as the CLI parses every command's (`--` from `npm run chaos --` is skipped). */
export function parseArgs(argv: string[]): Map<string, string | true> {
  const { values, rest } = splitFlags(argv.filter((a) => a !== '--'), CHAOS_FLAGS);
  if (rest.length > 0) throw new Error(`unknown flag ${rest[0]}`);
  return values;
}

const flagList = () => CHAOS_FLAGS.map((f) => `  ${f.flag.padEnd(18)} ${f.help}`).join('\n');

function optionsFromFlags(flags: Map<string, string | true>): ChaosOptions {
  const num = (flag: string, fallback: number) => {
    const v = flags.get(flag);
    if (v === undefined) return fallback;
    if (typeof v !== 'string' || !/^\d+$/.test(v)) throw new Error(`${flag} must be a whole number`);
    return Number(v);
  };
  const long = flags.has('--long');
  const seed = num('--seed', Math.floor(Math.random() * 2 ** 31));
  const workers = num('--workers', long ? 6 : 4);
  if (workers < 2) throw new Error('--workers must be at least 2 (a killed worker needs someone to take its jobs)');
  const json = flags.get('--json');
  const dir = flags.get('--dir');
  return {
    seed,
    jobs: num('--jobs', long ? 100_000 : 300),
    workers,
    concurrency: num('--concurrency', long ? 16 : 4),
    horizonMs: num('--horizon', long ? 240 : 20) * 1000,
    durationLimitMs: num('--duration-limit', long ? 1200 : 150) * 1000,
    secondServer: long || flags.has('--second-server'),
    long,
    networkFaults: !flags.has('--no-network-faults'),
    clockSteps: !flags.has('--no-clock-steps'),
    jsonPath: typeof json === 'string' ? json : undefined,
    dir: typeof dir === 'string' ? dir : undefined,
    tolerateUnhandledRejections: flags.has('--tolerate-unhandled-rejections'),
    progressEveryMs: long ? 5_000 : 2_000,
    timings: long ? LONG_TIMINGS : SHORT_TIMINGS,
  };
}

/** Runs the chaos harness with command-line flags; answers the exit code. */
export async function main(argv: string[]): Promise<number> {
  let flags: Map<string, string | true>;
  try {
    flags = parseArgs(argv);
  } catch (err) {
    console.error(`chaos: ${(err as Error).message}`);
    return 2;
  }
  return runFromFlags(flags);
}

/** The same, with flags already parsed. */
export async function runFromFlags(flags: Map<string, string | true>): Promise<number> {
  let options: ChaosOptions;
  try {
    options = optionsFromFlags(flags);
  } catch (err) {
    console.error(`chaos: ${(err as Error).message}\n\nflags:\n${flagList()}`);
    return 2;
  }
  const { exitCode } = await runChaos(options);
  // Nothing should be left running; if a stray handle is, do not hang on it.
  setTimeout(() => process.exit(exitCode), 2_000).unref();
  return exitCode;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(`usage: npm run chaos -- [flags]\n\nflags:\n${flagList()}`);
    process.exit(0);
  }
  const code = await main(argv);
  process.exit(code);
}
