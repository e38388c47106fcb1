/**
 * The ingest service's second entry point (OpenMeter's sink worker): the consumer groups that copy
 * the usage topic into Postgres (`pg-sink`) and ClickHouse (`ch-sink`), committing offsets only
 * after each write. The pg-sink hands each batch it wrote to the evaluators before it commits
 * (docs/decisions.md, "Alerts ride the pg-sink"): the `usage_quantity` alerts, read near their
 * threshold without waiting for the watermark (the commit waits for them), and the other policies
 * on counted usage (automatic top-ups, drafts, amount and credit alerts), queued to run after the
 * watermark. Health, readiness and metrics on SINKS_PORT. SIGTERM: stop fetching, write and
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
import {
  alertPolicy,
  draftPolicy,
  QuantityAlerts,
  topUpPolicy,
  UsageGuardrails,
} from '../../libs/guardrails/index.js';
import { createLogger } from '../../libs/log/index.js';
import { databaseCheck, startOpsServer } from '../../libs/observability/index.js';
import { openUsageEventLog, openUsageReadStores, startUsageSinks } from '../../libs/usage/index.js';

/**
 * The guardrails load the items their policies watch (top-ups, drafts, amount and credit alerts)
 * this often: one that becomes watched is evaluated within it...
 */
const GUARDRAILS_RELOAD_MS = 2000;
/**
 * ...and every watched item this often: the pg-sink commits a batch once its quantity alerts are
 * done, before the other policies ran over it (docs/decisions.md).
 */
const GUARDRAILS_SWEEP_MS = 30_000;

const config = loadConfigOrExit(sinkSettings);
const log = createLogger({ level: config.LOG_LEVEL, service: 'sinks' });
const { opened, sinks, ops, guardrails, alerts, evaluating, readStores, eventLog } = await startOrExit(
  'the sinks',
  async () => {
    const opened = await openDatabase(config, 'billing-sinks', log);
    if (config.DATABASE_URL) await reaching('DATABASE_URL', opened.db.query('SELECT 1'));
    // an event is on the log, or released, within the log's acknowledgement timeout and linger
    const settleMs = config.KAFKA_ACK_TIMEOUT_MS + config.KAFKA_LINGER_MS + 200;
    // policies on counted usage, handed the pg-sink's batches (docs/decisions.md)
    const guardrails = new UsageGuardrails({
      db: opened.db,
      log: log.child({ component: 'guardrails' }),
      policies: [
        topUpPolicy(opened.db),
        alertPolicy(opened.db, { metrics: 'others' }),
        draftPolicy(opened.db),
      ],
      // the items some policy watches, loaded this often: the usage of the others is skipped
      reloadMs: GUARDRAILS_RELOAD_MS,
      sweepMs: GUARDRAILS_SWEEP_MS,
    });
    const alerts = new QuantityAlerts({
      db: opened.db,
      log: log.child({ component: 'alerts' }),
      settleMs,
      // values of quantity alerts refreshed at most every 30 s: a read per alert, not per event
      refreshMs: 30_000,
    });
    const { eventLog } = await openUsageEventLog(config, opened.db, log);
    const readStores = openUsageReadStores(config, opened.db, eventLog, log);
    const evaluating = Boolean(config.SINKS_GUARDRAILS && config.KAFKA_BROKERS);
    if (evaluating) {
      // before the pg-sink starts: each loads (and reads) what it watches on its own
      alerts.attach(readStores);
      guardrails.attach(readStores);
    }
    // the policies first: queued, they return at once; the batch's commit waits for the alerts
    const sinks = await startUsageSinks({
      config,
      db: opened.db,
      log,
      listeners: evaluating ? [guardrails.sink('queued'), alerts.sink()] : [],
    });
    const ops = await startOpsServer({
      host: config.HOST,
      port: config.SINKS_PORT,
      checks: () => [databaseCheck(opened.db), ...sinks.checks()],
    });
    return { opened, sinks, ops, guardrails, alerts, evaluating, readStores, eventLog };
  },
);
const groups = sinks.runners.map((runner) => runner.name);
log.info({ port: ops.port, sinks: groups, alerts: evaluating }, 'sinks running');
process.stdout.write(
  `sinks running (${groups.join(', ')});${evaluating ? ' alerts on pg-sink;' : ''} ops on port ${ops.port}\n`,
);

stopOnSignals({
  timeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  log,
  deadlineMessage: 'shutdown deadline passed; exiting (uncommitted events are read again at restart)',
  async stop() {
    // the pg-sink hands its last batch to the evaluators, which then finish what they queued
    await sinks.stop();
    await guardrails.stop();
    await alerts.stop();
    await readStores.close();
    await eventLog.close();
    await ops.close();
    await opened.close();
  },
});
