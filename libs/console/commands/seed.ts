import { z } from 'zod';
import { BASE_PATH } from '../../schemas/index.js';
import { seedDemoData } from '../../seed/index.js';
import { defineCommand } from '../command.js';
import { integerFlag } from '../flags.js';

export const seedCommand = defineCommand({
  name: 'seed',
  summary: 'Create demo organizations with API keys and data',
  usage: '[--orgs N]',
  flags: z.strictObject({ orgs: integerFlag(1, 50).default(2) }),
  run: async ({ db, config, progress }, f) => {
    const orgs = await seedDemoData(db, { orgs: f.orgs, progress });
    const origin = config.PUBLIC_BASE_URL ?? `http://${config.HOST}:${config.PORT}`;
    return { base_url: `${origin.replace(/\/+$/, '')}${BASE_PATH}`, orgs };
  },
});
