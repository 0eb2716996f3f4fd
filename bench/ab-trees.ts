/**
 * What the in-process A/B scripts (bench/complete-route-ab.ts,
 * bench/bulk-enqueue-ab.ts) share: another checkout's src loaded beside this
 * one in the same pinned process, so two code versions take turns on one CPU
 * (the VM's vCPUs run at different speeds), and the route's share of a
 * call (the route's CPU less the engine's alone), per round.
 */
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { median } from './lib.ts';

export type BenchApp = { request(path: string, init: RequestInit): Promise<Response> };

/** A checkout's module at `src/<path>`. */
export const checkoutModule = (root: string, path: string) => import(pathToFileURL(join(root, 'src', path)).href);

/** A checkout's engine and app over a database, on the database's clock as `leasehold serve` runs. */
export async function checkoutServer(root: string): Promise<(db: unknown) => { engine: any; app: BenchApp }> {
  const [app, engine, store, config, clock, log] = await Promise.all(
    ['app.ts', 'engine/engine.ts', 'db/store/create-store.ts', 'core/config.ts', 'core/clock.ts', 'core/log.ts'].map((p) => checkoutModule(root, p)),
  );
  return (db) => {
    const e = engine.createEngine({ store: store.createStore(db), config: config.defaultConfig(), clock: clock.databaseClock, log: log.silentLogger });
    return { engine: e, app: app.createApp({ engine: e }) as BenchApp };
  };
}

/** This tree (prefix ''), and the checkout `baseRoot` names as `base-` when it is set. */
export async function abTrees<T>(baseRoot: string | undefined, load: (root: string) => Promise<T>): Promise<[string, T][]> {
  const trees: [string, T][] = [['', await load(join(import.meta.dirname, '..'))]];
  if (baseRoot) trees.push(['base-', await load(baseRoot)]);
  return trees;
}

/** For each tree, the route's share per round: `route` less `engine`, the two having taken turns. */
export function printRouteShares(res: ReadonlyMap<string, number[]>, prefixes: readonly string[], digits: number): void {
  const fmt = (xs: number[]) => xs.map((x) => x.toFixed(digits)).join(' ');
  for (const prefix of prefixes) {
    const engine = res.get(`${prefix}engine`)!;
    const share = res.get(`${prefix}route`)!.map((x, i) => x - engine[i]!);
    console.log(`${(prefix || 'this ') + 'tree'}: route share (route - engine) per round ${fmt(share)}  median ${median(share).toFixed(digits)} µs/job`);
  }
}
