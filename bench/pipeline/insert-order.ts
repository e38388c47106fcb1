/**
 * The `insert` part of bench:pipeline: what the pg-sink's write costs Postgres per event with the
 * ingest's time-ordered event ids (UUID version 7, newEventId) against random ones (version 4,
 * crypto.randomUUID), side by side. Each id kind has a database of its own (migrated, empty), and
 * the two take turns: BENCH_INSERT_ROUNDS rounds, each writing BENCH_INSERT_EVENTS events per kind
 * through PostgresUsageSink.write in batches of BENCH_INSERT_BATCH, as the sink does, with fresh
 * idempotency keys over BENCH_ITEMS items. Prints per round and in all Postgres CPU µs per event
 * (the kind's backend and the cluster's own processes: checkpointer, WAL writer) and the ratio.
 */
import { randomUUID } from 'node:crypto';
import { Database, migrate } from '../../libs/db/index.js';
import { newEventId } from '../../libs/usage/domain/event-id.js';
import { PostgresUsageSink } from '../../libs/usage/index.js';
import { createDatabase, dropDatabase, intEnv, postgresCpuSeconds, printTable } from '../support.js';

const KINDS = [
  { name: 'time-ordered (v7)', id: (nowMs: number) => newEventId(nowMs) },
  { name: 'random (v4)', id: () => randomUUID() },
] as const;

export interface InsertOrderResult {
  kind: string;
  events: number;
  postgresMicrosPerEvent: number;
  roundsMicrosPerEvent: number[];
}

export async function runInsertOrder(
  runId: string,
  log: (message: string) => void,
): Promise<InsertOrderResult[]> {
  const rounds = intEnv('BENCH_INSERT_ROUNDS', 4, 1);
  const eventsPerRound = intEnv('BENCH_INSERT_EVENTS', 100_000, 1);
  const batch = intEnv('BENCH_INSERT_BATCH', 1000, 1);
  const items = intEnv('BENCH_ITEMS', 500, 1);
  const names = KINDS.map((_, k) => `${runId}_insert_${k}`);
  const databases: Database[] = [];
  try {
    for (const name of names) {
      const db = new Database(await createDatabase(name), { poolSize: 1 });
      databases.push(db);
      await migrate(db);
    }
    const micros = KINDS.map(() => [] as number[]);
    let sequence = 0;
    for (let round = 1; round <= rounds; round++) {
      for (const [k, kind] of KINDS.entries()) {
        const sink = new PostgresUsageSink(databases[k]!);
        const before = await postgresCpuSeconds(names[k]!);
        for (let written = 0; written < eventsPerRound; written += batch) {
          const nowMs = Date.now();
          const events = Array.from({ length: Math.min(batch, eventsPerRound - written) }, () => {
            sequence++;
            return {
              id: kind.id(nowMs),
              orgId: 1,
              subscriptionItemId: 1 + (sequence % items),
              idempotencyKey: `insert-${String(sequence).padStart(12, '0')}`,
              quantity: '1.5',
              occurredAtMs: nowMs,
              recordedAtMs: nowMs,
            };
          });
          await sink.write(events);
        }
        const perEvent = (((await postgresCpuSeconds(names[k]!)) - before) * 1e6) / eventsPerRound;
        micros[k]!.push(Math.round(perEvent * 100) / 100);
        log(`insert round ${round}, ${kind.name}: ${perEvent.toFixed(2)} µs of Postgres CPU per event`);
      }
    }
    return KINDS.map((kind, k) => ({
      kind: kind.name,
      events: rounds * eventsPerRound,
      roundsMicrosPerEvent: micros[k]!,
      postgresMicrosPerEvent: Math.round((micros[k]!.reduce((a, b) => a + b, 0) / rounds) * 100) / 100,
    }));
  } finally {
    await Promise.all(databases.map((db) => db.close()));
    for (const name of names) await dropDatabase(name, log);
  }
}

export function printInsertOrder(results: readonly InsertOrderResult[]): void {
  console.log('\npg-sink write, Postgres CPU µs per event by event id kind (rounds alternated)');
  printTable(
    ['ids', 'events', 'µs/event', 'rounds'],
    results.map((r) => [r.kind, r.events, r.postgresMicrosPerEvent, r.roundsMicrosPerEvent.join(' / ')]),
  );
  const [ordered, random] = results;
  if (ordered && random) {
    console.log(
      `time-ordered / random: ${(ordered.postgresMicrosPerEvent / random.postgresMicrosPerEvent).toFixed(3)}`,
    );
  }
}
