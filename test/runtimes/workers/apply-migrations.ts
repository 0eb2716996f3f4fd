/** Setup file of the Workers run: applies drizzle/ to the test D1 database (idempotent). */
import { applyD1Migrations, env } from 'cloudflare:test';

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
