/**
 * The ingest service: usage routes on uWebSockets.js, deduplicated in Redis, published to Kafka
 * (or, without KAFKA_BROKERS, written to Postgres by the in-process log). Health, readiness and
 * metrics on the same port. SIGTERM: stop accepting, finish requests in flight, flush the
 * producer, exit within SHUTDOWN_TIMEOUT_MS.
 */
import {
  ingestSettings,
  loadConfigOrExit,
  reaching,
  startOrExit,
  stopOnSignals,
} from '../../libs/config/index.js';
import { openPlatform } from '../../libs/platform/index.js';
import { startIngest } from './start.js';

const config = loadConfigOrExit(ingestSettings);
const { platform, ingest } = await startOrExit('the ingest service', async () => {
  const platform = await openPlatform(config, 'ingest');
  if (config.DATABASE_URL) await reaching('DATABASE_URL', platform.db.query('SELECT 1'));
  const ingest = await startIngest({
    platform,
    host: config.HOST,
    port: config.INGEST_PORT,
    bodyLimit: config.INGEST_BODY_LIMIT_BYTES,
    trustedProxy: config.INGEST_TRUSTED_PROXY,
    allowFallbackServer: config.INGEST_ALLOW_FALLBACK_SERVER,
  });
  return { platform, ingest };
});
const { port, transport } = ingest.server;
platform.log.info({ port, transport }, 'ingest service listening');
process.stdout.write(`ingest service listening on http://${config.HOST}:${port} (${transport})\n`);

stopOnSignals({
  timeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  log: platform.log,
  async stop() {
    await ingest.close();
    await platform.close();
  },
});
