import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { untilListening } from './test/support/process-helpers.ts';
const ROOT = process.cwd();
const runtime = process.argv[2]!;
const n = Number(process.argv[3] ?? 5);
const COMMANDS: Record<string, [string, string[]]> = {
  node: [process.execPath, [join(ROOT, 'bin', 'leasehold.js'), 'serve']],
  bun: [join(ROOT, 'node_modules', '.bin', 'bun'), [join(ROOT, 'src', 'cli', 'bun.ts'), 'serve']],
  deno: [join(ROOT, 'node_modules', '.bin', 'deno'), ['run', '-A', join(ROOT, 'src', 'runtime', 'deno.ts')]],
};
const dir = mkdtempSync(join(tmpdir(), 'probe-'));
const [cmd, args] = COMMANDS[runtime]!;
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('LEASEHOLD_'))) as Record<string, string>;
const child = spawn(cmd, [...args, '--port', '0', ...process.argv.slice(4)], { cwd: ROOT, env: { ...env, NO_COLOR: '1', LEASEHOLD_DATABASE_URL: `file:${join(dir, 'x.db')}` }, stdio: ['ignore', 'pipe', 'pipe'] });
const server = await untilListening(child, runtime, 30_000);
const port = Number(new URL(server.url).port);
function tcpState(localPort: number, serverSide = false): string {
  const text = readFileSync('/proc/net/tcp', 'utf8') + readFileSync('/proc/net/tcp6', 'utf8');
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4) continue;
    const lp = parseInt(f[1]!.split(':')[1]!, 16), rp = parseInt(f[2]!.split(':')[1]!, 16);
    if (serverSide ? lp === port && rp === localPort : lp === localPort && rp === port) return ({ '01': 'ESTAB', '08': 'CLOSE_WAIT', '04': 'FIN_WAIT1', '05': 'FIN_WAIT2' } as any)[f[3]!] ?? f[3]!;
  }
  return 'gone';
}
const r = await fetch(`${server.url}/api/v1/queues/q/jobs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ payload: 'p'.repeat(1000_000) }) });
const id = ((await r.json()) as any).job.id;
const open = () => new Promise<Socket>((r) => { const s = connect(port, '127.0.0.1', () => r(s)); s.on('error', () => {}); s.pause(); });
const t0 = Date.now();
const pipe = await open();
pipe.write(`GET /api/v1/jobs/${id} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`.repeat(n));
let last = '';
while (Date.now() - t0 < 45_000) {
  const p = tcpState(pipe.localPort!) + '/server:' + tcpState(pipe.localPort!, true);
  if (p !== last) console.log(`t+${Date.now() - t0} ms big-answer non-reader=${p}`);
  last = p;
  await new Promise((r) => setTimeout(r, 250));
}
pipe.resume(); let answers = 0; pipe.on('data', (c: Buffer) => { answers += (c.toString('latin1').match(/HTTP\/1\.1 \d\d\d/g) ?? []).length; });
await new Promise((r) => setTimeout(r, 3000));
console.log('answers readable after resume:', answers, 'of', n);
child.kill('SIGTERM');
process.exit(0);
