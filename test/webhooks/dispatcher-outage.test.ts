import { describe, expect, it } from 'vitest';
import { Database } from '../../libs/db/index.js';
import { createLogger } from '../../libs/log/index.js';
import { createTestDatabase, setConnectionsAllowed } from '../helpers/database.js';
import { eventually, sleep, startDispatcher } from './support.js';

function capturedLog() {
  const lines: { level: number; msg: string; failures?: number; ms?: number }[] = [];
  const log = createLogger({
    level: 'info',
    service: 'dispatcher',
    destination: { write: (line: string) => lines.push(JSON.parse(line)) },
  });
  return { log, lines, messages: () => lines.map((line) => line.msg) };
}

describe('dispatcher while Postgres is unreachable', () => {
  it('logs the outage when it starts, not on every poll', async () => {
    const { log, messages: logged } = capturedLog();
    const unreachable = new Database('postgres://postgres@127.0.0.1:1/nowhere', { poolSize: 2 });
    const dispatcher = startDispatcher(unreachable, { pollMs: 50 }, log);
    try {
      await sleep(1500);
    } finally {
      await dispatcher.stop();
      await unreachable.close();
    }
    const messages = logged();
    expect(messages.filter((msg) => msg === 'dispatcher loop failed; retrying')).toHaveLength(1);
    expect(messages.filter((msg) => msg === 'dispatcher loop still failing; retrying')).toHaveLength(0);
    expect(messages.filter((msg) => msg.startsWith('cannot LISTEN'))).toHaveLength(1);
  });
});

/** The backends of `db`'s database whose last statement was a LISTEN: the dispatcher's listener. */
async function listeningPids(db: Database): Promise<number[]> {
  const { rows } = await db.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'`,
  );
  return rows.map((row) => row.pid);
}

describe('dispatcher whose database goes away and comes back', () => {
  it('logs the outage once when it starts and once when it ends, with the failed turns counted', async () => {
    const database = await createTestDatabase('dispatcher_back');
    const { log, lines, messages } = capturedLog();
    const dispatcher = startDispatcher(database.db, { pollMs: 50 }, log);
    try {
      await eventually(
        () => listeningPids(database.db),
        (pids) => pids.length === 1,
      );
      // two outages in a row: the second is logged as new, not as the first going on
      for (const outage of [1, 2]) {
        await setConnectionsAllowed(database, false);
        // several failed turns, then the database takes connections again
        await eventually(
          async () => messages().filter((msg) => msg === 'dispatcher loop failed; retrying').length,
          (count) => count === outage,
        );
        await sleep(300);
        await setConnectionsAllowed(database, true);
        await eventually(
          async () => messages().filter((msg) => msg === 'dispatcher loop recovered').length,
          (count) => count === outage,
        );
      }
    } finally {
      await dispatcher.stop();
      await database.drop();
    }
    const loop = lines.filter((line) => line.msg.startsWith('dispatcher loop'));
    expect(loop.map((line) => line.msg)).toEqual([
      'dispatcher loop failed; retrying',
      'dispatcher loop recovered',
      'dispatcher loop failed; retrying',
      'dispatcher loop recovered',
    ]);
    for (const recovered of [loop[1]!, loop[3]!]) {
      expect(recovered.failures).toBeGreaterThanOrEqual(3);
      // the outage's length: from its first failed turn, at least the 300 ms waited
      expect(recovered.ms).toBeGreaterThanOrEqual(300);
      expect(recovered.ms).toBeLessThan(30_000);
    }
  });
});

describe('dispatcher whose LISTEN connection is lost', () => {
  it('logs the loss once, gives the connection back once, and listens again on a fresh one', async () => {
    const database = await createTestDatabase('listener_lost');
    const { log, messages } = capturedLog();
    const dispatcher = startDispatcher(database.db, { pollMs: 100 }, log);
    const listening = () => listeningPids(database.db);
    try {
      const [first] = await eventually(listening, (pids) => pids.length === 1);
      await database.db.query('SELECT pg_terminate_backend($1)', [first]);
      const again = await eventually(listening, (pids) => pids.length === 1 && pids[0] !== first);
      expect(again).not.toContain(first);
      expect(messages().filter((msg) => msg.startsWith('outbox listener connection lost'))).toEqual([
        'outbox listener connection lost; polling until it is back',
      ]);
      // the pool took the dead connection back once and still serves
      expect((await database.db.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      await dispatcher.stop();
      await database.drop();
    }
    expect(messages().filter((msg) => /loop failed|cannot LISTEN/.test(msg))).toEqual([]);
  });

  it('stopped before it listens again, gives the lost connection back only once', async () => {
    const database = await createTestDatabase('listener_lost_stop');
    const { log, messages } = capturedLog();
    // a long poll: nothing listens again before the stop
    const dispatcher = startDispatcher(database.db, { pollMs: 60_000 }, log);
    try {
      const [pid] = await eventually(
        () => listeningPids(database.db),
        (pids) => pids.length === 1,
      );
      await database.db.query('SELECT pg_terminate_backend($1)', [pid]);
      await eventually(
        async () => messages(),
        (logged) => logged.some((msg) => msg.startsWith('outbox listener connection lost')),
      );
      await dispatcher.stop();
    } finally {
      await database.drop();
    }
  });
});
