/**
 * The ingest service's second entry point (OpenMeter's sink worker): the consumer groups that copy
 * the usage topic into Postgres (`pg-sink`) and ClickHouse (`ch-sink`), committing offsets only
 * after each write, and `guardrails`, which runs the policies on counted usage (automatic top-ups,
 * alerts). Health, readiness and metrics on SINKS_PORT. SIGTERM: stop fetching, write and
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
import { alertPolicy, draftPolicy, topUpPolicy, UsageGuardrails } from '../../libs/guardrails/index.js';
import { createLogger } from '../../libs/log/index.js';
import { databaseCheck, startOpsServer } from '../../libs/observability/index.js';
import { openUsageEventLog, openUsageReadStores, startUsageSinks } from '../../libs/usage/index.js';

const config = loadConfigOrExit(sinkSettings);
const log = createLogger({ level: config.LOG_LEVEL, service: 'sinks' });
const { opened, sinks, ops, guardrails, readStores, eventLog } = await startOrExit('the sinks', async () => {
  const opened = await openDatabase(config, 'billing-sinks', log);
  if (config.DATABASE_URL) await reaching('DATABASE_URL', opened.db.query('SELECT 1'));
  // policies on counted usage (automatic top-ups): a consumer group of their own (docs/decisions.md)
  const guardrails = new UsageGuardrails({
    db: opened.db,
    log: log.child({ component: 'guardrails' }),
    policies: [
      topUpPolicy(opened.db),
      alertPolicy(opened.db, {
        // an event is on the log, or released, within the log's acknowledgement timeout and linger
        settleMs: config.KAFKA_ACK_TIMEOUT_MS + config.KAFKA_LINGER_MS + 200,
        log: log.child({ component: 'alerts' }),
      }),
      draftPolicy(opened.db),
    ],
  });
  const { eventLog } = await openUsageEventLog(config, opened.db, log);
  const readStores = openUsageReadStores(config, opened.db, eventLog, log);
  guardrails.attach(readStores);
  const sinks = await startUsageSinks({
    config,
    db: opened.db,
    log,
    listeners: config.SINKS_GUARDRAILS ? [guardrails.sink('evaluated')] : [],
  });
  const ops = await startOpsServer({
    host: config.HOST,
    port: config.SINKS_PORT,
    checks: () => [databaseCheck(opened.db), ...sinks.checks()],
  });
  return { opened, sinks, ops, guardrails, readStores, eventLog };
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
    await guardrails.stop();
    await readStores.close();
    await eventLog.close();
    await ops.close();
    await opened.close();
  },
});
