import { z } from 'zod';
import { createLogger } from '../../log/index.js';
import { BASE_PATH } from '../../schemas/index.js';
import { seedDemo } from '../../seed/index.js';
import { defineCommand } from '../command.js';
import { integerFlag } from '../flags.js';
import { apiOrigin } from '../lookups.js';

export const seedCommand = defineCommand({
  name: 'seed',
  summary: 'Create demo organizations with API keys and data',
  usage: '[--orgs N]',
  flags: z.strictObject({ orgs: integerFlag(1, 50).default(2) }),
  run: async ({ db, config, progress }, f) => {
    // Usage goes through the usage log, as accepted events do; only its failures are worth a line.
    const log = createLogger({ level: 'error', service: 'console', destination: 'stderr' });
    const orgs = await seedDemo(db, { config, log, orgs: f.orgs, progress });
    return { base_url: `${apiOrigin(config)}${BASE_PATH}`, orgs };
  },
});
