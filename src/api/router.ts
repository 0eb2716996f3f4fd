/**
 * Route registration: every route declares its method, path, role, summary
 * and body validator in one spec. The spec both guards the handler (auth, then
 * body validation, before any write) and is kept in a list for the API docs.
 */
import type { Context, Hono } from 'hono';
import type { Config } from '../core/config.ts';
import type { AuthThrottle } from './throttle.ts';
import { requireRole, roleToken, type Role } from './auth.ts';
import { readBody } from './http.ts';
import { refuseSimpleCrossSite } from './web-guards.ts';
import type { Validator } from './validate.ts';
import type { ResponseName } from './schemas.ts';

/** The refusals a route can answer besides the ones every route can (see errorStatuses in openapi.ts). */
export type RouteError = 'not_found' | 'lease_lost' | 'conflict';

export interface RouteSpec<B = unknown, Q = unknown> {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  /** Hono path, relative to /api/v1. */
  path: string;
  /** null: open (health checks). */
  role: Role | null;
  /** Unique, stable: what generated clients name the call. */
  operationId: string;
  /** The document's grouping: jobs, worker, queues, schedules, observability. */
  tag: 'jobs' | 'worker' | 'queues' | 'schedules' | 'observability';
  summary: string;
  /** The success answer: its schema in src/api/schemas.ts and its status (200 unless said). */
  answers: { schema: ResponseName; status?: 200 | 201; description?: string; also?: { status: 200; schema: ResponseName; description: string } };
  /**
   * Refusals particular to this route: not_found (404), lease_lost or
   * conflict (409). 409 is for owned writes and state conflicts only: a
   * GET never answers it (Routes.add refuses such a spec).
   */
  errors?: RouteError[];
  body?: Validator<B>;
  /** The query string, as an obj() of string fields: checked before the handler, and listed in the OpenAPI document. */
  query?: Validator<Q>;
}

export class Routes {
  readonly specs: RouteSpec[] = [];
  constructor(
    readonly app: Hono,
    private readonly config: Config,
    private readonly throttle?: AuthThrottle,
  ) {}

  add<B, Q = undefined>(spec: RouteSpec<B, Q>, handler: (c: Context, body: B, query: Q) => Response | Promise<Response>): void {
    if (spec.method === 'get' && spec.errors?.some((e) => e !== 'not_found')) throw new Error(`${spec.operationId}: a read cannot answer 409`);
    if (this.specs.some((s) => s.operationId === spec.operationId)) throw new Error(`${spec.operationId}: operationId used twice`);
    this.specs.push(spec as RouteSpec);
    const guards = spec.role ? [requireRole(spec.role, this.config, this.throttle)] : [];
    const isOpen = !spec.role || !roleToken(spec.role, this.config);
    this.app.on([spec.method.toUpperCase()], [spec.path], ...guards, async function handle(c: Context) {
      if (spec.method !== 'get') refuseSimpleCrossSite(c, isOpen);
      const query = spec.query ? spec.query.parse(c.req.query(), '') : (undefined as Q);
      const body = spec.body ? await readBody(c, spec.body) : (undefined as B);
      return handler(c, body, query);
    });
  }
}
