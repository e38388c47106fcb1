import {
  apiSettings,
  loadConfigOrExit,
  reaching,
  startOrExit,
  stopOnSignals,
} from '../../libs/config/index.js';
import { openPlatform } from '../../libs/platform/index.js';
import { openUsageIngest } from '../../libs/usage/index.js';
import { apiDepsFrom, buildApiApp } from './app.js';

const config = loadConfigOrExit(apiSettings);
const { platform, usage, app } = await startOrExit('the api service', async () => {
  const platform = await openPlatform(config, 'api');
  if (config.DATABASE_URL) await reaching('DATABASE_URL', platform.db.query('SELECT 1'));
  const usage = await openUsageIngest(platform);
  const app = await buildApiApp(apiDepsFrom(config, platform, usage));
  await app.listen({ host: config.HOST, port: config.PORT });
  return { platform, usage, app };
});

stopOnSignals({
  timeoutMs: config.SHUTDOWN_TIMEOUT_MS,
  log: platform.log,
  async stop() {
    await app.close();
    // a handler whose client went away may still be using the database or Redis
    await app.requestsFinished();
    await usage.close();
    await platform.close();
  },
});
