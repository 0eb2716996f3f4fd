/**
 * The OpenAPI document, generated from the route specs (their validators
 * describe themselves as JSON Schema), so it cannot drift from what the
 * server accepts.
 */
import type { RouteSpec } from './router.ts';

const ERROR = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: { code: { type: 'string' }, message: { type: 'string' }, field: { type: 'string' } },
      required: ['code', 'message'],
    },
  },
};

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } });

export function openApiDocument(specs: readonly RouteSpec[], version: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const spec of specs) {
    const path = `/api/v1${spec.path.replace(/:([A-Za-z]+)/g, '{$1}')}`;
    const params: Record<string, unknown>[] = [...spec.path.matchAll(/:([A-Za-z]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    // Query parameters from the route's query validator (an obj() of string fields).
    const query = spec.query?.schema as { properties?: Record<string, unknown>; required?: string[] } | undefined;
    for (const [name, schema] of Object.entries(query?.properties ?? {})) {
      params.push({ name, in: 'query', required: query?.required?.includes(name) ?? false, schema });
    }
    paths[path] ??= {};
    paths[path][spec.method] = {
      summary: spec.summary,
      ...(spec.role ? { security: spec.role === 'reader' ? [{ readonlyToken: [] }, { adminToken: [] }] : [{ [spec.role === 'admin' ? 'adminToken' : 'workerToken']: [] }] } : {}),
      ...(params.length ? { parameters: params } : {}),
      ...(spec.body ? { requestBody: { required: true, content: { 'application/json': { schema: spec.body.schema } } } } : {}),
      responses: {
        '200': { description: 'OK' },
        '400': errorResponse('invalid_request: the field named in error.field is wrong; nothing changed'),
        '401': errorResponse('unauthorized'),
        '404': errorResponse('not_found'),
        '409': errorResponse('lease_lost (the lock token is no longer the current claim) or conflict'),
        '413': errorResponse('payload_too_large'),
      },
    };
  }
  return {
    openapi: '3.0.3',
    info: {
      title: 'leasehold',
      version,
      description:
        'A job queue without zombie jobs. Claim jobs, keep their leases alive with heartbeats, and finish them with the lockToken of the claim. Every write to a running job is fenced by that token: a stale one gets 409 lease_lost and changes nothing.',
    },
    paths,
    components: {
      schemas: { Error: ERROR },
      securitySchemes: {
        workerToken: { type: 'http', scheme: 'bearer', description: 'LEASEHOLD_WORKER_TOKEN (the admin token is accepted too)' },
        adminToken: { type: 'http', scheme: 'bearer', description: 'LEASEHOLD_ADMIN_TOKEN' },
        readonlyToken: { type: 'http', scheme: 'bearer', description: 'LEASEHOLD_READONLY_TOKEN: metrics, alerts and tuning only (the admin token is accepted too)' },
      },
    },
  };
}
