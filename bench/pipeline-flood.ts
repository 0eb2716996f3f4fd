/**
 * A hostile-client reproduction, not a benchmark: CONNECTIONS sockets each
 * pipeline REQUESTS `GET /api/v1/openapi.json` in one write and never read
 * an answer. Before the per-connection bounds in the runtime layer, each
 * server computed and buffered every answer (about 100 KB each, so 1 GB for
 * 20 x 500) and kept every connection open. It prints the server's RSS over
 * time, how many of the connections the server has closed (read from
 * /proc/net/tcp: a client that never reads sees no FIN), and whether an
 * honest `/healthz` still answers.
 *
 *   npx tsx bench/pipeline-flood.ts [node|bun|deno] [connections=20] [requests=500] [seconds=20]
 *
 * The server runs as a child on 127.0.0.1 with a fresh database file; all
 * traffic stays on loopback and the run stops by itself.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { untilListening } from '../test/support/process-helpers.ts';

const ROOT = join(import.meta.dirname, '..');
const [runtime = 'node', connections = '20', requests = '500', seconds = '20'] = process.argv.slice(2);

const COMMANDS: Record<string, [string, string[]]> = {
  node: [process.execPath, [join(ROOT, 'bin', 'leasehold.js'), 'serve']],
  bun: [join(ROOT, 'node_modules', '.bin', 'bun'), [join(ROOT, 'src', 'cli', 'bun.ts'), 'serve']],
  deno: [join(ROOT, 'node_modules', '.bin', 'deno'), ['run', '-A', join(ROOT, 'src', 'runtime', 'deno.ts')]],
};

/** How many of these client ports the server still holds an established connection with. */
function serverHeld(port: number, clientPorts: Set<number>): number {
  let held = 0;
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 4) continue;
      const local = parseInt(f[1]!.split(':')[1]!, 16);
      const remote = parseInt(f[2]!.split(':')[1]!, 16);
      if (local === port && clientPorts.has(remote) && f[3] === '01') held++;
    }
  }
  return held;
}

function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024);
}

/** The server's own process: `bin/leasehold.js` and deno run in the spawned pid. */
const dir = mkdtempSync(join(tmpdir(), 'leasehold-flood-'));
const [cmd, args] = COMMANDS[runtime]!;
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LEASEHOLD_'))) as Record<string, string>;
const child = spawn(cmd, [...args, '--port', '0'], {
  cwd: ROOT,
  env: { ...env, NO_COLOR: '1', LEASEHOLD_DATABASE_URL: `file:${join(dir, 'x.db')}` },
  stdio: ['ignore', 'pipe', 'pipe'],
});
try {
  const server = await untilListening(child, runtime, 30_000);
  const url = new URL(server.url);
  const port = Number(url.port);
  const pid = child.pid!;
  await (await fetch(`${server.url}/api/v1/openapi.json`)).text();
  const before = rssMiB(pid);
  console.log(`${runtime}: listening on ${server.url}, RSS ${before} MiB before the flood`);

  const request = `GET /api/v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`;
  const sockets: Socket[] = [];
  const clientPorts = new Set<number>();
  for (let i = 0; i < Number(connections); i++) {
    const socket = connect(port, '127.0.0.1');
    socket.pause(); // never read
    socket.on('error', () => {});
    socket.on('connect', () => {
      clientPorts.add(socket.localPort!);
      socket.write(request.repeat(Number(requests)));
    });
    sockets.push(socket);
  }

  let peak = before;
  let closedByServer = 0;
  const end = Date.now() + Number(seconds) * 1000;
  while (Date.now() < end) {
    await new Promise((r) => setTimeout(r, 1000));
    const rss = rssMiB(pid);
    peak = Math.max(peak, rss);
    closedByServer = clientPorts.size - serverHeld(port, clientPorts);
    const started = performance.now();
    const health = await fetch(`${server.url}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
      (r) => `${r.status}`,
      (e: Error) => e.name,
    );
    console.log(`  t+${Math.round((Number(seconds) * 1000 - (end - Date.now())) / 1000)}s RSS ${rss} MiB, closed by server ${closedByServer}/${connections}, /healthz ${health} in ${Math.round(performance.now() - started)} ms`);
  }
  console.log(`${runtime}: RSS ${before} MiB before, peak ${peak} MiB, ${closedByServer}/${connections} connections closed by the server`);
  for (const s of sockets) s.destroy();
} finally {
  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  rmSync(dir, { recursive: true, force: true });
}
