/**
 * Every command in the shell blocks (```sh, ```bash) of README.md and docs/*.md
 * exists as printed, for someone in a fresh clone after `npm ci`:
 *
 * - `leasehold`, `npx leasehold` and `./leasehold` (the Bun binary: the same
 *   CLI): the command is a real one, each word before its flags is one of its
 *   subcommands, and each `--flag` is one its `--help` lists;
 * - `npm run X`: X is a script; the flags after `--` are ones its program
 *   reads (the chaos run: `leasehold chaos --help`; a tsx, bun or node script:
 *   its source names the flag); wrangler's own flags are not checked;
 * - `npm install`: a path or a tarball (leasehold is not on the registry);
 * - `npx TOOL`: a dev dependency provides TOOL (a bare `bun` or `deno` is not
 *   on PATH in a fresh clone: only through npm run or npx);
 * - every path into the repository (src/, scripts/, examples/, ...) exists;
 * - anything else must be a program of the host (docker, curl, turso, ...),
 *   listed in HOST_PROGRAMS, so a new kind of command is a decision here.
 *
 * Which of them are also run is test/e2e/fresh-clone.test.ts: the README's
 * `npx leasehold serve`, its producer and worker, examples/node-worker.ts,
 * `npm start`, and deploy-bun.md's one-shot commands.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'leasehold.js');
const SCRIPTS = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
const DOCS = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Programs a doc may assume the host has; only their repository paths are checked. */
const HOST_PROGRAMS = new Set(['docker', 'curl', 'turso', 'apt-get', 'redis-server', 'export', 'cd', 'git']);
/** npm's own commands the docs use (npm run is checked apart). */
const NPM_COMMANDS = new Set(['ci', 'test', 'start', 'pack', 'install', 'install-scripts']);
const REPO_PATH = /^(?:\.\/)?(?:(?:src|scripts|docs|test|bench|examples|drizzle|public|bin)\/[\w./-]+|[\w-]+\.config\.ts)$/;

interface Command {
  at: string;
  words: string[];
}

/** The commands of a file's shell blocks: continuations joined, comments dropped, `&&` split. */
function commandsOf(file: string): Command[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const out: Command[] = [];
  let inShell = false;
  let pending = '';
  let pendingAt = 0;
  lines.forEach((line, i) => {
    if (/^```/.test(line)) {
      inShell = !inShell && /^```(sh|bash)\s*$/.test(line);
      return;
    }
    if (!inShell) return;
    const text = line.replace(/(^|\s)#(\s.*)?$/, '').trimEnd();
    if (!pending) pendingAt = i + 1;
    if (text.endsWith('\\')) {
      pending += `${text.slice(0, -1)} `;
      return;
    }
    const whole = (pending + text).trim();
    pending = '';
    for (const part of whole.split(/\s&&\s/)) if (part.trim()) out.push({ at: `${file}:${pendingAt}`, words: shellWords(part) });
  });
  return out;
}

/** Splits like a shell does for these simple lines: quotes kept together, then removed. */
function shellWords(text: string): string[] {
  return [...text.matchAll(/'[^']*'|"[^"]*"|\S+/g)].map((m) => m[0].replace(/^(['"])(.*)\1$/, '$2'));
}

const helps = new Map<string, { status: number | null; text: string }>();
function helpOf(command: string) {
  let help = helps.get(command);
  if (!help) {
    const r = spawnSync(process.execPath, [BIN, ...(command ? [command] : []), '--help'], { encoding: 'utf8', cwd: ROOT });
    help = { status: r.status, text: r.stdout + r.stderr };
    helps.set(command, help);
  }
  return help;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const listsFlag = (help: string, flag: string) => new RegExp(`(^|\\s)${escape(flag)}(\\s|=|,|$)`, 'm').test(help);

/** `leasehold ARGS`: a real command, its subcommand words and its flags. */
function checkCli(args: string[], problems: string[], at: string) {
  const dash = args.indexOf('--');
  const own = dash === -1 ? args : args.slice(0, dash);
  const command = own[0] && !own[0].startsWith('-') ? own[0] : '';
  const help = helpOf(command);
  if (help.status !== 0) return problems.push(`${at}: leasehold ${command} is not a command`);
  const rest = command ? own.slice(1) : own;
  const firstFlag = rest.findIndex((w) => w.startsWith('--') || w.startsWith('[--'));
  for (const [i, raw] of rest.entries()) {
    for (const word of raw.split('|').map((w) => w.replace(/^[[(]+|[\])]+$/g, ''))) {
      if (word.startsWith('--')) {
        const flag = word.split('=')[0]!;
        if (flag !== '--help' && flag !== '--version' && !listsFlag(help.text, flag)) problems.push(`${at}: leasehold ${command || '(top level)'} has no ${flag}`);
      } else if ((firstFlag === -1 || i < firstFlag) && /^[a-z][a-z-]*$/.test(word) && !new RegExp(`\\b${escape(word)}\\b`).test(help.text)) {
        problems.push(`${at}: leasehold ${command} has no subcommand ${word}`);
      }
    }
  }
}

/** `npm run SCRIPT -- FLAGS`: the script exists, and its program reads the flags. */
function checkNpmRun(args: string[], problems: string[], at: string) {
  const script = SCRIPTS[args[0] ?? ''];
  if (!script) return problems.push(`${at}: no npm script ${args[0]}`);
  const dash = args.indexOf('--');
  const flags = dash === -1 ? [] : args.slice(dash + 1).filter((w) => w.startsWith('--')).map((w) => w.split('=')[0]!);
  if (!flags.length) return;
  const [runner, file] = script.split(' ');
  if (['tsx', 'bun', 'node'].includes(runner!) && file && existsSync(join(ROOT, file))) {
    const source = readFileSync(join(ROOT, file), 'utf8');
    for (const flag of flags) if (!source.includes(`'${flag}`)) problems.push(`${at}: npm run ${args[0]} (${file}) reads no ${flag}`);
  }
  // Otherwise a third-party program's flags (npm run dev:cf -- --var ...: wrangler's).
}

function problemsOf(file: string): string[] {
  const problems: string[] = [];
  for (const { at, words: all } of commandsOf(file)) {
    const words = all.slice(all.findIndex((w) => !/^[A-Z_]+=/.test(w)));
    const [program, ...args] = words;
    if (!program) continue;
    for (const w of words) if (REPO_PATH.test(w) && !existsSync(join(ROOT, w))) problems.push(`${at}: ${w} does not exist`);
    if (program === 'leasehold' || program === './leasehold') checkCli(args, problems, at);
    else if (program === 'npx') {
      const [tool, ...rest] = args;
      if (tool === 'leasehold') checkCli(rest, problems, at);
      else if (!existsSync(join(ROOT, 'node_modules', '.bin', tool!))) problems.push(`${at}: npx ${tool}: no dependency provides it`);
    } else if (program === 'npm') {
      const [sub, ...rest] = args;
      if (sub === 'run') checkNpmRun(rest, problems, at);
      else if (!NPM_COMMANDS.has(sub!)) problems.push(`${at}: npm ${sub} is not one of the npm commands this test knows`);
      else if ((sub === 'test' || sub === 'start') && !SCRIPTS[sub]) problems.push(`${at}: no npm script ${sub}`);
      else if (sub === 'install') for (const a of rest.filter((a) => !a.startsWith('-'))) if (!a.includes('/') && !a.endsWith('.tgz')) problems.push(`${at}: npm install ${a} fetches from the registry, where leasehold is not`);
    } else if (!HOST_PROGRAMS.has(program)) {
      problems.push(`${at}: ${program} is not on PATH in a fresh clone (a dependency's bin runs through npm run or npx), nor a host program this test knows`);
    }
  }
  return problems;
}

test('the docs have shell blocks to check (the extraction works)', () => {
  const all = DOCS.flatMap(commandsOf);
  expect(all.length).toBeGreaterThan(50);
  expect(all.map((c) => c.words.join(' '))).toContain('npx leasehold serve');
  expect(all.map((c) => c.words.join(' '))).toContain('npm run chaos -- --seed 42');
});

test.each(DOCS)('%s: every command in its shell blocks exists as printed', (file) => {
  expect(problemsOf(file)).toEqual([]);
});
