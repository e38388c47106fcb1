import { z } from 'zod';
import { migrate } from '../../db/index.js';
import { defineCommand } from '../command.js';

export const migrateCommand = defineCommand({
  name: 'migrate',
  summary: 'Apply pending database migrations',
  usage: '',
  flags: z.strictObject({}),
  needsSchema: false,
  run: async ({ db }) => ({ applied: await migrate(db) }),
});
