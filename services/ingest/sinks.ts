/**
 * The ingest service's second entry point (OpenMeter's sink worker): the consumer groups that copy
 * the usage topic into Postgres (`pg-sink`) and ClickHouse (`ch-sink`), committing offsets only
 * after each write. Health, readiness and metrics on SINKS_PORT. SIGTERM: stop fetching, write and
 * commit the current batch, leave the groups, exit within SHUTDOWN_TIMEOUT_MS.
 */
import {
  loadConfigOrExit,
  reaching,
  sinkSettings,
  startOrExit,
  stopOnSignals,
} from '../../libs/config/index.js';
import { openDatabase } from '../../libs/db/index.js';
import { createLogger } from '../../libs/log/index.js';
import { databaseCheck, startOpsServer } from '../../libs/observability/index.js';
import { startUsageSinks } from '../../libs/usage/index.js';

const config = loadConfigOrExit(sinkSettings);
const log = createLogger({ level: config.LOG_LEVEL, service: 'sinks' });
const { opened, sinks, ops } = await startOrExit('the sinks', async () => {
  const opened = await openDatabase(config, 'billing-sinks', log);
  if (config.DATABASE_URL) await reaching('DATABASE_URL', opened.db.query('SELECT 1'));
  const sinks = await startUsageSinks({ config, db: opened.db, log });
  const ops = await startOpsServer({
    host: config.HOST,
    port: config.SINKS_PORT,
    checks: () => [databaseCheck(opened.db), ...sinks.checks()],
  });
  return { opened, sinks, ops };
});
log.info({ port: ops.port, sinks: sinks.runners.map((runner) => runner.name) }, 'sinks running');
process.stdout.write(
  `sinks running (${sinks.runners.map((r) => r.name).join(', ')}); ops on port ${ops.port}\n`,
);

stopOnSignals({
  timeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  log,
  deadlineMessage: 'shutdown deadline passed; exiting (uncommitted events are read again at restart)',
  async stop() {
    await sinks.stop();
    await ops.close();
    await opened.close();
  },
});
