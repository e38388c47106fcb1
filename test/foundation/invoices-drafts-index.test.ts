import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { draftPolicy } from '../../libs/guardrails/index.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';

/**
 * The drafts policy's reload (every 2 s in the sinks) reads the partial index of drafts
 * (migration 024), not the whole invoices table: its query's predicate must imply the index's.
 */
let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase('drafts-index');
});
afterAll(() => database?.drop());

describe('the drafts reload', () => {
  it("reads invoices_drafts, the policy's query as it is written", async () => {
    const { watches } = draftPolicy(database.db);
    const plan = await database.db.transaction(async (tx) => {
      // the table is empty here: without this the planner would rightly scan it
      await tx.query('SET LOCAL enable_seqscan = off');
      const { rows } = await tx.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${watches}`);
      return rows.map((row) => row['QUERY PLAN']).join('\n');
    });
    expect(plan).toMatch(/Index Only Scan using invoices_drafts on invoices/);
  });
});
