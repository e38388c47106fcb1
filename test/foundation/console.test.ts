import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ConfigError } from '../../libs/config/index.js';
import { PARTIAL_FAILURE } from '../../libs/console/command.js';
import { type Command, runConsole } from '../../libs/console/index.js';
import { ApiError } from '../../libs/errors/index.js';
import { inProcessConsole } from '../helpers/console.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { runTs } from '../helpers/processes.js';

let database: TestDatabase;
let env: Record<string, string>;

beforeAll(async () => {
  database = await createTestDatabase('console');
  env = { DATABASE_URL: database.url, LOG_LEVEL: 'silent', PORT: '8080', HOST: '127.0.0.1' };
});
afterAll(() => database.drop());

const console_ = inProcessConsole(() => env);

describe('console', () => {
  it('migrate applies nothing more on a migrated database', async () => {
    const result = await console_('migrate');
    expect(result.code).toBe(0);
    expect(result.json()).toEqual({ applied: [] });
  });

  it('org create, set-plan and set-limit print the organization', async () => {
    const created = await console_(
      ...['org', 'create', '--name', 'Acme Corp', '--plan', 'starter'],
      ...['--payment-terms-days', '45', '--currency', 'USD'],
    );
    expect(created.code).toBe(0);
    const org = created.json();
    expect(org).toMatchObject({
      id: expect.any(Number),
      name: 'Acme Corp',
      plan: 'starter',
      requests_per_hour: 10_000,
      payment_terms_days: 45,
      default_currency: 'USD',
    });

    const plan = await console_('org', 'set-plan', '--org', String(org.id), '--plan', 'growth');
    expect(plan.json()).toMatchObject({ plan: 'growth', requests_per_hour: 50_000 });

    const limit = await console_('org', 'set-limit', '--org', String(org.id), '--requests-per-hour', '123');
    expect(limit.json()).toMatchObject({ rate_limit_override: 123, requests_per_hour: 123 });

    const back = await console_('org', 'set-limit', '--org', String(org.id), '--requests-per-hour', 'plan');
    expect(back.json()).toMatchObject({ rate_limit_override: null, requests_per_hour: 50_000 });
  });

  it('key create prints the key once; key revoke revokes it', async () => {
    const org = (await console_('org', 'create', '--name', 'Keys Inc')).json();
    const created = await console_('key', 'create', '--org', String(org.id), '--name', 'ci');
    expect(created.code).toBe(0);
    const key = created.json();
    expect(Object.keys(key).sort()).toEqual(['api_key', 'id', 'name', 'org_id', 'prefix']);
    expect(key.api_key).toMatch(/^sk_live_/);
    expect(key.org_id).toBe(org.id);

    const revoked = await console_('key', 'revoke', '--key-id', String(key.id));
    expect(revoked.code).toBe(0);
    expect(revoked.json()).toMatchObject({ id: key.id, revoked_at: expect.any(String) });
    const { rows } = await database.db.query('SELECT revoked_at FROM api_keys WHERE id = $1', [key.id]);
    expect(rows[0]!.revoked_at).toBeInstanceOf(Date);
  });

  it('fails with a message on stderr and a non-zero exit for an unknown organization', async () => {
    const result = await console_('key', 'create', '--org', '999999');
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/NOT_FOUND.*Organization 999999 not found/);
  });

  it('rejects bad flags and unknown commands with usage (exit 2)', async () => {
    const badPlan = await console_('org', 'create', '--name', 'X', '--plan', 'platinum');
    expect(badPlan.code).toBe(2);
    expect(badPlan.stderr).toMatch(/--plan/);
    const missing = await console_('org', 'set-limit', '--org', '1');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--requests-per-hour/);
    const unknownFlag = await console_('org', 'create', '--name', 'X', '--colour', 'red');
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.stderr).toMatch(/--colour/);
    const noClickHouse = await console_('clickhouse', 'migrate');
    expect(noClickHouse.code).toBe(2);
    expect(noClickHouse.stderr).toMatch(/CLICKHOUSE_URL: not set/);
    const unknown = await console_('frobnicate');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command: frobnicate/);
  });

  it('reads numeric flags as digits only: exponents, hex and padding exit 2 naming the flag', async () => {
    const org = (await console_('org', 'create', '--name', 'Digits Co')).json();
    const cases: [string[], RegExp][] = [
      [['org', 'set-limit', '--org', String(org.id), '--requests-per-hour', '1e3'], /--requests-per-hour/],
      [['org', 'set-limit', '--org', String(org.id), '--requests-per-hour', '1.0'], /--requests-per-hour/],
      // the column is a Postgres integer: past it, a usage error rather than the database's
      [
        ['org', 'set-limit', '--org', String(org.id), '--requests-per-hour', '2147483648'],
        /--requests-per-hour: .*at most/i,
      ],
      [['org', 'set-limit', '--org', `0x${org.id.toString(16)}`, '--requests-per-hour', '7'], /--org/],
      [['org', 'set-limit', '--org', ` ${org.id}`, '--requests-per-hour', '7'], /--org/],
      [['org', 'create', '--name', 'X', '--payment-terms-days', '1e1'], /--payment-terms-days/],
      [['seed', '--orgs', '0x2'], /--orgs/],
    ];
    for (const [argv, message] of cases) {
      const result = await console_(...argv);
      expect(result.code, argv.join(' ')).toBe(2);
      expect(result.stderr).toMatch(message);
    }
    const { rows } = await database.db.query('SELECT rate_limit_override FROM organizations WHERE id = $1', [
      org.id,
    ]);
    expect(rows[0]!.rate_limit_override).toBeNull();
    const set = await console_('org', 'set-limit', '--org', String(org.id), '--requests-per-hour', '1000');
    expect(set.json()).toMatchObject({ rate_limit_override: 1000 });
  });

  it('prints help on stdout with exit 0 when asked for: --help, help, a group with --help', async () => {
    for (const argv of [['--help'], ['help']]) {
      const result = await console_(...argv);
      expect(result.code, argv.join(' ')).toBe(0);
      expect(result.stderr).toBe('');
      expect(result.stdout).toMatch(/^usage: [\s\S]*org create[\s\S]*payment record/);
    }
    for (const argv of [
      ['org', '--help'],
      ['help', 'org'],
    ]) {
      const group = await console_(...argv);
      expect(group.code, argv.join(' ')).toBe(0);
      expect(group.stderr).toBe('');
      expect(group.stdout).toMatch(/org create[\s\S]*org set-plan[\s\S]*org set-limit/);
      expect(group.stdout).not.toMatch(/payment record/);
    }
    const unknown = await console_('frobnicate', '--help');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command: frobnicate/);
  });

  it('prints the help of one command asked for as `help <command>`', async () => {
    const result = await console_('help', 'org', 'create');
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^usage: npx billing org create --name NAME/);
    const unknown = await console_('help', 'frobnicate');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^unknown command: frobnicate\n/);
  });

  it('customer show with --org finds the customer only within that organization', async () => {
    const owner = (await console_('org', 'create', '--name', 'Owner Co')).json();
    const other = (await console_('org', 'create', '--name', 'Other Co')).json();
    const customer = (
      await console_('customer', 'create', '--org', String(owner.id), '--name', 'Scoped')
    ).json();
    const own = await console_('customer', 'show', '--id', String(customer.id), '--org', String(owner.id));
    expect(own.code).toBe(0);
    expect(own.json()).toMatchObject({ id: customer.id, name: 'Scoped' });
    // --org names the organization to look in: another one's customer is not found there
    const elsewhere = await console_(
      'customer',
      'show',
      '--id',
      String(customer.id),
      '--org',
      String(other.id),
    );
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stdout).toBe('');
    expect(elsewhere.stderr).toMatch(/NOT_FOUND/);
  });

  it('names the flag, not the body field, when the domain refuses a value (exit 2, with usage)', async () => {
    const org = (await console_('org', 'create', '--name', 'Fields Co')).json();
    const customer = await console_(
      'customer',
      'create',
      '--org',
      String(org.id),
      '--name',
      'X',
      '--contact-name',
      'x'.repeat(256),
    );
    expect(customer.code).toBe(2);
    expect(customer.stdout).toBe('');
    expect(customer.stderr).toContain("invalid flags for 'customer create':\n  --contact-name: ");
    expect(customer.stderr).toMatch(/\nusage: customer create --org ID/);

    const product = await console_(
      'product',
      'create',
      '--org',
      String(org.id),
      '--name',
      'P',
      '--unit-price',
      '1',
      '--pricing-type',
      'recurring',
      '--pricing-scheme',
      'tiered',
      '--billing-period',
      'monthly',
    );
    expect(product.code).toBe(2);
    expect(product.stderr).toContain('  --pricing-mode: ');
    expect(product.stderr).toContain('  --tiers: ');
    expect(product.stderr).not.toMatch(/pricing_mode|The request/);

    const subscription = await console_(
      'subscription',
      'create',
      '--org',
      String(org.id),
      '--customer',
      '1',
      '--items',
      '[]',
    );
    expect(subscription.code).toBe(2);
    expect(subscription.stderr).toContain('  --items: ');
  });

  it('says it cannot connect to the database, naming DATABASE_URL, and neither hangs nor prints a stack', async () => {
    // A port that accepts connections and never answers: pg would wait on its handshake forever.
    const silent = net.createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as net.AddressInfo;
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    try {
      for (const url of [
        `postgres://postgres:secret@127.0.0.1:${closedPort}/billing`,
        `postgres://postgres:secret@127.0.0.1:${port}/billing`,
      ]) {
        const started = Date.now();
        const result = await runTs('bin/console.ts', ['org', 'create', '--name', 'Nowhere'], {
          ...env,
          DATABASE_URL: url,
        });
        expect(result.code, url).toBe(1);
        expect(result.stdout).toBe('');
        expect(result.stderr).toMatch(
          /^cannot connect to the database \(DATABASE_URL 127\.0\.0\.1:\d+\/billing\): /,
        );
        expect(result.stderr).not.toMatch(/secret|\n\s+at /);
        expect(Date.now() - started).toBeLessThan(20_000);
      }
    } finally {
      silent.close();
    }
  }, 60_000);

  it('says what is wrong with a flag: required, true or false, needs a value, given twice (exit 2)', async () => {
    const cases: [string[], string][] = [
      [['customer', 'add-credit', '--id', '1'], '--amount: Required: give --amount <value>.'],
      [
        ['customer', 'create', '--org', '1', '--name', 'X', '--tax-exempt', 'maybe'],
        '--tax-exempt: Must be true or false.',
      ],
      [['org', 'create', '--name'], '--name: Needs a value: --name <value>.'],
      [['customer', 'add-credit', '--id', '1', '--amount'], '--amount: Needs a value: --amount <value>.'],
      [['org', 'create', '--name', 'A', '--name', 'B'], '--name: Given twice; give it once.'],
    ];
    for (const [argv, message] of cases) {
      const result = await console_(...argv);
      expect(result.code, argv.join(' ')).toBe(2);
      expect(result.stderr).toContain(message);
      expect(result.stdout).toBe('');
    }
  });

  it('seed creates organizations with working keys and enough customers to page', async () => {
    const result = await console_('seed', '--orgs', '2');
    expect(result.code).toBe(0);
    const seeded = result.json();
    expect(seeded.base_url).toBe('http://127.0.0.1:8080/api/public/v1');
    expect(seeded.orgs).toHaveLength(2);
    for (const org of seeded.orgs) {
      expect(org.api_key).toMatch(/^sk_test_/);
      const { rows } = await database.db.query(
        `SELECT count(*) AS n, count(*) FILTER (WHERE country = 'CA') AS ca, count(*) FILTER (WHERE country = 'US') AS us
           FROM customers WHERE org_id = $1`,
        [org.id],
      );
      expect(rows[0]!.n).toBeGreaterThanOrEqual(60);
      expect(rows[0]!.ca).toBeGreaterThan(0);
      expect(rows[0]!.us).toBeGreaterThan(0);
    }
    expect(result.stderr).toMatch(/seeding organization 1\/2/);
  });

  it('runs as its own process: JSON on stdout, exit 0; failure: stderr, exit 1', async () => {
    const ok = await runTs('bin/console.ts', ['org', 'create', '--name', 'Process Co'], env);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ name: 'Process Co' });
    const failed = await runTs('bin/console.ts', ['key', 'revoke', '--key-id', '987654'], env);
    expect(failed.code).toBe(1);
    expect(failed.stdout).toBe('');
    expect(failed.stderr).toMatch(/API key 987654 not found/);
  });
});

/** Commands of the tests' own: each ends one way, so each way out of runConsole is seen. */
describe('console outcomes of a command run', () => {
  const flags = z.strictObject({ 'contact-full-name': z.string().optional(), start: z.string().optional() });
  const outcome = (name: string, run: Command['run'], extra: Partial<Command> = {}): Command =>
    ({ name, summary: name, usage: '[--contact-full-name N] [--start S]', flags, run, ...extra }) as Command;
  const refusal = ApiError.validation([
    { field: 'contact_full_name', message: 'Too long.', code: 'too_long' },
    { field: 'start_date.0', message: 'Not a date.', code: 'invalid' },
    { field: 'items', message: 'Unknown.', code: 'invalid' },
  ]);
  const commands = [
    outcome('partial', async () => ({ failed: 1 }), { exitCode: () => PARTIAL_FAILURE }),
    outcome('whole', async () => ({ failed: 0 })),
    outcome('unset', async () => {
      throw new ConfigError(['CLICKHOUSE_URL: not set']);
    }),
    outcome(
      'refuse',
      async () => {
        throw refusal;
      },
      { flagOfField: { start_date: 'start' } },
    ),
    outcome(
      'refuse-read',
      async ({ db }) => {
        await db.transaction((tx) => tx.query('SELECT 1'));
        throw refusal;
      },
      { flagOfField: { start_date: 'start' } },
    ),
    outcome('refuse-outside', async ({ db }) => {
      await db.query('SELECT 1');
      throw refusal;
    }),
    outcome('conflict', async () => {
      throw ApiError.conflict('Not now.');
    }),
    outcome('no-schema', async () => {
      throw Object.assign(new Error('relation "x" does not exist'), { code: '42P01' });
    }),
    outcome('broken', async () => {
      throw new Error('boom');
    }),
  ];
  const run = async (...argv: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await runConsole(
      argv,
      { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) },
      env,
      commands,
    );
    return { code, stdout, stderr };
  };

  it("exits with the command's own code when it has one, else 0, its JSON on stdout", async () => {
    expect(await run('partial')).toEqual({
      code: PARTIAL_FAILURE,
      stdout: '{\n  "failed": 1\n}\n',
      stderr: '',
    });
    expect(await run('whole')).toEqual({ code: 0, stdout: '{\n  "failed": 0\n}\n', stderr: '' });
  });

  it('exits 2 for a setting the command lacks, naming it', async () => {
    expect(await run('unset')).toEqual({
      code: 2,
      stdout: '',
      stderr: 'Invalid configuration:\n  - CLICKHOUSE_URL: not set\n',
    });
  });

  it('exits 2 naming the flags for a refusal before any transaction read, 1 after one', async () => {
    const before = await run('refuse');
    expect(before).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "invalid flags for 'refuse':\n  --contact-full-name: Too long.\n  --start.0: Not a date.\n  items: Unknown.\n" +
        'usage: refuse [--contact-full-name N] [--start S]\n',
    });
    // a read outside any transaction (an existence check) is not a read of stored records
    expect((await run('refuse-outside')).code).toBe(2);
    expect(await run('refuse-read')).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'error (VALIDATION_ERROR): The request has invalid fields; see details.\n' +
        '  --contact-full-name: Too long.\n  --start.0: Not a date.\n  items: Unknown.\n',
    });
  });

  it('exits 1 with the error code for other failures, and says when the schema is missing', async () => {
    expect(await run('conflict')).toEqual({ code: 1, stdout: '', stderr: 'error (CONFLICT): Not now.\n' });
    expect(await run('no-schema')).toEqual({
      code: 1,
      stdout: '',
      stderr: 'error: the database schema is missing; run `console migrate` first\n',
    });
    expect(await run('broken')).toEqual({ code: 1, stdout: '', stderr: 'error: boom\n' });
  });
});
