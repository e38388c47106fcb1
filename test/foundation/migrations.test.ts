import { afterAll, describe, expect, it } from 'vitest';
import { migrate } from '../../libs/db/index.js';
import { createTestDatabase } from '../helpers/database.js';
import { roundTripEveryTable } from '../helpers/round-trip.js';

describe('migrations', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('apply on Postgres, are idempotent, and every table round-trips', async () => {
    const database = await createTestDatabase('migrations');
    cleanups.push(() => database.drop());
    // the template is already migrated: a second run applies nothing
    expect(await migrate(database.db)).toEqual([]);
    const counts = await roundTripEveryTable(database.db);
    expect(Object.values(counts).every((n) => n === 1)).toBe(true);
  });
});
