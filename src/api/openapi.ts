/**
 * The OpenAPI 3.0 document (GET /api/v1/openapi.json), generated from the
 * route specs: request schemas are the validators that check requests
 * (src/core/validate.ts), response schemas come from src/api/schemas.ts
 * (compile-checked against the wire types the SDK and client decode), each
 * route's error statuses from the guards that can refuse it (errorStatuses),
 * and its security from the token table requireRole admits by (ROLE_TOKENS in
 * src/api/auth.ts). So it cannot drift from what the server accepts and
 * answers; test/api/openapi.test.ts validates it with an OpenAPI validator and
 * calls every operation with every kind of token, test/api/openapi-answers.test.ts
 * checks real answers against it, and test/api/openapi-client.test.ts runs a
 * worker with a client generated from it.
 */
import { errorStatus, type ErrorCode } from '../core/errors.ts';
import type { TokenRole } from '../core/tokens.ts';
import { PROMETHEUS_ROLE, ROLE_REFUSALS, ROLE_TOKENS, type Role } from './auth.ts';
import { JOB_ID_PATTERN, QUEUE_PATTERN } from './http.ts';
import { requestBody, routeRefusals, type RouteSpec } from './router.ts';
import { ErrorSchema, RESPONSES } from './schemas.ts';
import { HOST_REFUSALS } from './web-guards.ts';

/** What each error status means, as the document says it. */
const ERROR_STATUS = {
  400: 'invalid_request: the field named in error.field is wrong (or the Host header); nothing changed',
  401: 'unauthorized: no bearer token, or not a valid one',
  403: 'forbidden: a valid token of a role this call does not take (the worker token on an admin or read-only call, the read-only token on a worker or admin call), or a cross-site browser request to a route without a token',
  404: 'not_found: no such job (or queue, or effect); error.field names what',
  409: 'lease_lost (the lock token is no longer the current claim; error.status says what the job is now) or conflict (the job is not in a state this action applies to); nothing changed',
  413: 'payload_too_large: the body is over LEASEHOLD_MAX_PAYLOAD_BYTES',
  415: 'unsupported_media_type: every call that is not a GET or a DELETE sends Content-Type: application/json (with {} where it takes no fields)',
  421: 'misdirected_request: without tokens only loopback Host names are answered',
  429: 'too_many_requests: too many wrong tokens from this client, or (a claim with waitMs that found nothing) too many claims already waiting on this server or for this token; Retry-After says when to try again',
  500: 'internal: an unexpected error (logged with the request id; never detailed here)',
  503: 'unavailable (the disk is full, the database is locked past the busy timeout, read-only or damaged: error.message says which), starting (migrations are running) or, on Workers, misconfigured / not_migrated: retry later; Retry-After says when',
} as const;

type ErrorStatus = keyof typeof ERROR_STATUS;

/** Statuses of refusals, with the two any request can meet: 500 (a bug) and 503 (storage, startup). */
const withServerErrors = (codes: readonly ErrorCode[]): ErrorStatus[] => [...new Set<ErrorStatus>([...codes.map(errorStatus), 500, 503])].sort((a, b) => a - b);

/**
 * Which error statuses a route can answer: those of its guard chain, as
 * Routes.add builds it (routeRefusals in src/api/router.ts, from the refusals
 * each guard declares beside the code that throws them), and 500 and 503.
 */
export function errorStatuses(spec: Pick<RouteSpec, 'method' | 'role' | 'errors' | 'path' | 'body' | 'query'>): ErrorStatus[] {
  return withServerErrors(routeRefusals(spec));
}

const SCHEME: Record<TokenRole, string> = { worker: 'workerToken', admin: 'adminToken', readonly: 'readonlyToken' };

/** The tokens a role takes, as the document's security: the same table requireRole admits by. */
const security = (role: Role | null) => (role ? ROLE_TOKENS[role].map((t) => ({ [SCHEME[t]]: [] })) : []);

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (description: string, schema: unknown) => ({ description, content: { 'application/json': { schema } } });
const errorResponses = (statuses: ErrorStatus[]) => Object.fromEntries(statuses.map((s) => [String(s), { $ref: `#/components/responses/Error${s}` }]));

const PATH_PARAMS: Record<string, { pattern: RegExp; maxLength: number; description: string }> = {
  id: { pattern: JOB_ID_PATTERN, maxLength: 15, description: 'a job id as the API returned it' },
  queue: { pattern: QUEUE_PATTERN, maxLength: 128, description: 'queue name: letters, digits, _ . : -' },
  name: { pattern: QUEUE_PATTERN, maxLength: 128, description: 'schedule name: letters, digits, _ . : -' },
};

function pathParameters(path: string) {
  return [...path.matchAll(/:([A-Za-z]+)/g)].map((m) => {
    const p = PATH_PARAMS[m[1]!];
    if (!p) throw new Error(`no pattern for the path parameter :${m[1]}`);
    return { name: m[1], in: 'path', required: true, description: p.description, schema: { type: 'string', pattern: p.pattern.source, maxLength: p.maxLength } };
  });
}


export function openApiDocument(specs: readonly RouteSpec[], version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const spec of specs) {
    const path = `/api/v1${spec.path.replace(/:([A-Za-z]+)/g, '{$1}')}`;
    const params: Record<string, unknown>[] = pathParameters(spec.path);
    // Query parameters from the route's query validator (an obj() of query fields).
    const query = spec.query?.schema as { properties?: Record<string, unknown>; required?: string[] } | undefined;
    for (const [name, schema] of Object.entries(query?.properties ?? {})) {
      params.push({ name, in: 'query', required: query?.required?.includes(name) ?? false, schema });
    }
    const ok = spec.answers;
    const body = requestBody(spec);
    paths[path] ??= {};
    paths[path][spec.method] = {
      operationId: spec.operationId,
      tags: [spec.tag],
      summary: spec.summary,
      security: security(spec.role),
      ...(params.length ? { parameters: params } : {}),
      ...(body ? { requestBody: { required: true, content: { 'application/json': { schema: body.schema } } } } : {}),
      responses: {
        [String(ok.status ?? 200)]: json(ok.description ?? 'OK', RESPONSES[ok.schema]),
        ...(ok.also ? { [String(ok.also.status)]: json(ok.also.description, RESPONSES[ok.also.schema]) } : {}),
        ...errorResponses(errorStatuses(spec)),
      },
    };
  }
  paths['/api/v1/openapi.json'] = {
    get: {
      operationId: 'getOpenApiDocument',
      tags: ['meta'],
      summary: 'This document (open, like /healthz: it holds no data); sent gzipped to a client that accepts it, and 304 to one that sends its ETag back in If-None-Match',
      security: [],
      responses: {
        '200': json('The OpenAPI document', { type: 'object', additionalProperties: true }),
        '304': { description: 'Not modified: the ETag sent in If-None-Match is the current one' },
        ...errorResponses(withServerErrors(HOST_REFUSALS)),
      },
    },
  };
  paths['/healthz'] = {
    get: {
      operationId: 'getHealth',
      tags: ['meta'],
      summary: 'Liveness, database reachability and whether a reaper still runs (maintenance), for load balancers and HEALTHCHECK (open; a late reaper is still 200)',
      security: [],
      responses: { '200': json('Serving, and the database answers', RESPONSES.health), ...errorResponses(withServerErrors(HOST_REFUSALS)) },
    },
  };
  paths['/metrics'] = {
    get: {
      operationId: 'getPrometheusMetrics',
      tags: ['meta'],
      summary: 'Prometheus metrics (text exposition format 0.0.4): the read-only or the admin token',
      security: security(PROMETHEUS_ROLE),
      responses: {
        '200': { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } },
        ...errorResponses(withServerErrors([...HOST_REFUSALS, ...ROLE_REFUSALS])),
      },
    },
  };
  return {
    openapi: '3.0.3',
    info: {
      title: 'leasehold',
      version,
      description:
        'A job queue without zombie jobs. Claim jobs, keep their leases alive with heartbeats, and finish them with the lockToken of the claim. Every write to a running job is fenced by that token: a stale one gets 409 lease_lost and changes nothing. Every answer carries x-request-id (yours, if you sent a sane one), which the server logs with the request.',
    },
    servers: [{ url: '/' }],
    tags: [
      { name: 'jobs', description: 'Enqueue, read and manage jobs (producers and operators)' },
      { name: 'worker', description: 'Claim, heartbeat and finish jobs: every write is fenced by the lock token' },
      { name: 'queues', description: 'Queue health, settings, pause and the reaper (admin)' },
      { name: 'schedules', description: 'Recurring jobs: cron (with a time zone) or interval schedules that enqueue into a queue (admin)' },
      { name: 'observability', description: 'Metrics, alerts and tuning as JSON (admin)' },
      { name: 'meta', description: 'Health, Prometheus metrics and this document' },
    ],
    paths,
    components: {
      schemas: { Error: ErrorSchema },
      responses: Object.fromEntries(Object.entries(ERROR_STATUS).map(([status, description]) => [`Error${status}`, json(description, ref('Error'))])),
      securitySchemes: {
        workerToken: { type: 'http', scheme: 'bearer', description: 'LEASEHOLD_WORKER_TOKEN (the admin token is accepted too)' },
        adminToken: { type: 'http', scheme: 'bearer', description: 'LEASEHOLD_ADMIN_TOKEN' },
        readonlyToken: { type: 'http', scheme: 'bearer', description: 'LEASEHOLD_READONLY_TOKEN: metrics, alerts and tuning only (the admin token is accepted too)' },
      },
    },
  };
}
