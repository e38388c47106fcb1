/**
 * The webhook dispatcher as its own process (any number of replicas; they share the work through
 * Postgres row locks). Serves /healthz, /readyz and /metrics on DISPATCHER_PORT.
 */
import {
  dispatcherSettings,
  loadConfigOrExit,
  reaching,
  startOrExit,
  stopOnSignals,
} from '../../libs/config/index.js';
import { openDatabase } from '../../libs/db/index.js';
import { createLogger } from '../../libs/log/index.js';
import { databaseCheck, startOpsServer } from '../../libs/observability/index.js';
import { buildDispatcher } from './dispatcher.js';

const config = loadConfigOrExit(dispatcherSettings);
const log = createLogger({ level: config.LOG_LEVEL, service: 'dispatcher' });
const { database, dispatcher, ops } = await startOrExit('the dispatcher', async () => {
  const database = await openDatabase(config, 'billing-dispatcher', log);
  if (config.DATABASE_URL) await reaching('DATABASE_URL', database.db.query('SELECT 1'));
  const dispatcher = buildDispatcher({ db: database.db, log, config });
  const ops = await startOpsServer({
    host: config.HOST,
    port: config.DISPATCHER_PORT,
    checks: () => [databaseCheck(database.db)],
  });
  return { database, dispatcher, ops };
});
dispatcher.start();
log.info({ port: ops.port, concurrency: config.DISPATCHER_CONCURRENCY }, 'dispatcher started');

stopOnSignals({
  timeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  log,
  // Past the deadline the leases of unfinished attempts expire and another replica makes them.
  deadlineMessage: 'shutdown deadline passed; exiting with attempts unfinished',
  async stop(signal) {
    log.info(
      { signal, active_attempts: dispatcher.activeAttempts },
      'stopping: no new claims, finishing attempts',
    );
    await dispatcher.stop();
    await ops.close();
    await database.close();
    log.info('dispatcher stopped');
  },
});
