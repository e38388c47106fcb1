import { createLogger } from '../log/index.js';
import { openUsageEventLog, openUsageReadStores, type UsageReadStores } from '../usage/index.js';
import type { ConsoleContext } from './command.js';

/**
 * The usage read-back's stores for one command (credit balances, top-up checks), on this
 * deployment's log, closed when `work` ends.
 */
export async function withReadStores<T>(
  { config, db }: ConsoleContext,
  work: (stores: UsageReadStores) => Promise<T>,
): Promise<T> {
  const log = createLogger({ level: 'warn', service: 'console' });
  const { eventLog, clickhouse } = await openUsageEventLog(config, db, log);
  const stores = openUsageReadStores(config, db, eventLog, log);
  try {
    return await work(stores);
  } finally {
    await stores.close();
    await eventLog.close();
    await clickhouse?.close();
  }
}
