import { z } from 'zod';
import { createApiKey, revokeApiKey } from '../../auth/index.js';
import { defineCommand } from '../command.js';
import { idFlag } from '../flags.js';

export const keyCommands = [
  defineCommand({
    name: 'key create',
    summary: 'Create an API key; the key is printed once and only its hash is stored',
    usage: '--org ID [--name NAME] [--environment live|test]',
    flags: z.strictObject({
      org: idFlag,
      name: z.string().max(255).default(''),
      environment: z.enum(['live', 'test']).default('live'),
    }),
    run: ({ db }, f) => createApiKey(db, { orgId: f.org, name: f.name, environment: f.environment }),
  }),
  defineCommand({
    name: 'key revoke',
    summary: 'Revoke an API key (refused by every service within about a second)',
    usage: '--key-id ID',
    flags: z.strictObject({ 'key-id': idFlag }),
    run: ({ db }, f) => revokeApiKey(db, f['key-id']),
  }),
];
