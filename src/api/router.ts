/**
 * Route registration: every route declares its method, path, role, summary
 * and body validator in one spec. The spec both guards the handler (auth, then
 * body validation, before any write) and is kept in a list for the API docs.
 */
import type { Context, Hono } from 'hono';
import type { Config } from '../core/config.ts';
import type { AuthThrottle } from './throttle.ts';
import type { ErrorCode } from '../core/errors.ts';
import { requireRole, ROLE_REFUSALS, roleToken, type Role } from './auth.ts';
import { BODY_REFUSALS, readBody } from './http.ts';
import { CROSS_SITE_REFUSALS, HOST_REFUSALS, refuseSimpleCrossSite } from './web-guards.ts';
import { obj, type Validator } from '../core/validate.ts';
import type { ResponseName } from './schemas.ts';

/** The refusals a route can answer besides the ones its guards can (see routeRefusals below). */
export type RouteError = 'not_found' | 'lease_lost' | 'conflict' | 'too_many_requests';

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
  /** The query string, as an obj() of query fields (queryInt, queryBool, word, str): checked before the handler, and listed in the OpenAPI document. */
  query?: Validator<Q>;
}

/**
 * The body a route reads. A POST always reads one: it is the write a web page
 * can send cross-site without a preflight, unless its type is JSON, so a POST
 * that takes no fields still takes `{}` (an empty body counts as `{}`), and
 * the document says so, and a generated client sends it with its type. A
 * DELETE needs none: no page can send one cross-site without the preflight
 * we never answer.
 */
export function requestBody(spec: Pick<RouteSpec, 'method' | 'body'>): Validator<unknown> | undefined {
  return spec.body ?? (spec.method === 'post' ? NO_FIELDS : undefined);
}

const NO_FIELDS = obj({}, 'this call takes no fields: send {} (an empty body counts as {})');

/**
 * Every refusal a route can answer, by the step of its guard chain that
 * answers it: what Routes.add runs for this spec, and what the OpenAPI
 * document and docs/http-api.md list for it.
 */
export function routeRefusals(spec: Pick<RouteSpec, 'method' | 'role' | 'errors' | 'path' | 'body' | 'query'>): ErrorCode[] {
  const body = requestBody(spec);
  const codes = new Set<ErrorCode>(HOST_REFUSALS);
  if (spec.role) for (const code of ROLE_REFUSALS) codes.add(code);
  if (spec.method !== 'get') {
    // Only on an open route; with a token for its role, the token is what admits.
    for (const code of CROSS_SITE_REFUSALS) codes.add(code);
    // The body limit (app.ts) reads every write's body.
    codes.add('payload_too_large');
  }
  if (body) for (const code of BODY_REFUSALS) codes.add(code);
  if (spec.query) codes.add('invalid_request');
  // Path parameters are checked by the handler: a queue or schedule name that is not one is a 400, a job id a 404 (ids are opaque).
  if (/:(queue|name)\b/.test(spec.path)) codes.add('invalid_request');
  if (spec.path.includes(':id')) codes.add('not_found');
  for (const code of spec.errors ?? []) codes.add(code);
  return [...codes];
}

/**
 * The query string as the route's validator reads it: each field's first
 * value, and every value of a field whose schema is an array (`?where=a&where=b`,
 * as OpenAPI's default form style sends one).
 */
function queryFields(c: Context, query: Validator<unknown>): Record<string, string | string[]> {
  const fields: Record<string, string | string[]> = c.req.query();
  const properties = (query.schema.properties ?? {}) as Record<string, { type?: unknown }>;
  for (const [name, schema] of Object.entries(properties)) {
    if (schema.type === 'array' && name in fields) fields[name] = c.req.queries(name) ?? [];
  }
  return fields;
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
    const bodyValidator = requestBody(spec);
    this.app.on([spec.method.toUpperCase()], [spec.path], ...guards, async function handle(c: Context) {
      if (spec.method !== 'get') refuseSimpleCrossSite(c, { routeIsOpen: isOpen, readsBody: bodyValidator !== undefined });
      const query = spec.query ? spec.query.parse(queryFields(c, spec.query), '') : (undefined as Q);
      // A route without fields of its own reads `{}`, and an empty body counts as that.
      const body = bodyValidator ? ((await readBody(c, bodyValidator, { emptyIs: spec.body ? undefined : {} })) as B) : (undefined as B);
      return handler(c, body, query);
    });
  }
}
