import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Command, runConsole } from '../../libs/console/index.js';
import { consoleEnv, inProcessConsole } from '../helpers/console.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/** What the console leaves behind in Postgres: no schema it was not asked for, no connection. */

let database: TestDatabase;
const run = inProcessConsole(() => consoleEnv(database.url));

beforeAll(async () => {
  database = await createTestDatabase('console_database');
}, 60_000);
afterAll(() => database?.drop());

/** The console's connections to this test's database (its pool names itself `console`). */
async function consoleConnections(): Promise<number> {
  const { rows } = await database.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND application_name = 'console'`,
    [database.name],
  );
  return rows[0]!.n;
}

describe('console and its Postgres database', () => {
  it('closes its connections when the command ends', async () => {
    const created = await run('org', 'create', '--name', 'Closed Co');
    expect(created.code, created.stderr).toBe(0);
    // a backend leaves pg_stat_activity a moment after its client hung up; an idle pool's stay 30 s
    const deadline = Date.now() + 5_000;
    while ((await consoleConnections()) > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await consoleConnections()).toBe(0);
  });

  it('runs a transaction of the command with the isolation the command asks for', async () => {
    const isolated: Command = {
      name: 'isolated',
      summary: 'isolated',
      usage: '',
      flags: z.strictObject({}),
      run: ({ db }) =>
        db.transaction(
          async (tx) => (await tx.query('SHOW transaction_isolation')).rows[0].transaction_isolation,
          { isolation: 'repeatable read' },
        ),
    };
    let stdout = '';
    const code = await runConsole(
      ['isolated'],
      { stdout: (text) => (stdout += text), stderr: () => {} },
      consoleEnv(database.url),
      [isolated],
    );
    expect({ code, stdout }).toEqual({ code: 0, stdout: '"repeatable read"\n' });
  });

  it('says to migrate an unmigrated database, and migrates nothing itself', async () => {
    await database.db.query('DROP SCHEMA public CASCADE');
    await database.db.query('CREATE SCHEMA public');
    const listed = await run('org', 'list');
    expect(listed).toMatchObject({
      code: 1,
      stdout: '',
      stderr: 'error: the database schema is missing; run `console migrate` first\n',
    });
    const { rows } = await database.db.query(`SELECT to_regclass('public.organizations') AS table`);
    expect(rows).toEqual([{ table: null }]);
  });
});
