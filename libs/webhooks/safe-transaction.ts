import type pg from 'pg';
import type { Database } from '../db/index.js';

/**
 * `db.transaction`, surviving a connection lost between two statements. pg then emits 'error' on
 * the checked-out client, and an 'error' nobody listens to crashes the process (seen when
 * Postgres restarts or terminates backends). With a listener, the next statement fails instead,
 * the transaction rolls back as usual, and the pool drops the broken client.
 * Every caller of Database.transaction needs this; until libs/db does it, webhooks guard their own.
 */
export function safeTransaction<T>(db: Database, fn: (tx: pg.PoolClient) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    const ignore = () => {};
    tx.on('error', ignore);
    try {
      return await fn(tx);
    } finally {
      tx.off('error', ignore);
    }
  });
}
