/**
 * The few `cloudflare:test` APIs the Workers tests use, declared structurally
 * so the main tsconfig (Node + DOM libs) type-checks test/runtimes/workers without
 * @cloudflare/workers-types (whose globals clash with DOM's). The full
 * declarations are in @cloudflare/vitest-pool-workers/types.
 */
declare module 'cloudflare:test' {
  export interface D1Migration {
    name: string;
    queries: string[];
  }
  export interface TestExecutionContext {
    waitUntil(promise: Promise<unknown>): void;
    passThroughOnException(): void;
  }
  export interface TestScheduledController {
    readonly scheduledTime: number;
    readonly cron: string;
    noRetry(): void;
  }
  export const env: {
    DB: import('../../../src/runtime/cloudflare.ts').D1DatabaseLike;
    TEST_MIGRATIONS: D1Migration[];
    [key: string]: unknown;
  };
  export const SELF: { fetch(input: string | Request, init?: RequestInit): Promise<Response> };
  export function applyD1Migrations(db: unknown, migrations: D1Migration[], migrationsTableName?: string): Promise<void>;
  export function createExecutionContext(): TestExecutionContext;
  export function waitOnExecutionContext(ctx: TestExecutionContext): Promise<void>;
  export function createScheduledController(options?: { scheduledTime?: number | Date; cron?: string }): TestScheduledController;
}
