import { z } from 'zod';
import { createApiKey, listApiKeys, revokeApiKey } from '../../auth/index.js';
import { getOrganization } from '../../organizations/index.js';
import { defineCommand } from '../command.js';
import { idFlag } from '../flags.js';
import { pageFlags, pageOf } from '../lookups.js';

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
    name: 'key list',
    summary:
      "An organization's API keys, revoked ones included, newest first: id, name, environment, prefix, " +
      'created_at, revoked_at (never a key nor its hash)',
    usage: '--org ID [--limit 1-100] [--offset N]',
    flags: z.strictObject({ org: idFlag, ...pageFlags }),
    run: async ({ db }, f) => {
      await getOrganization(db, f.org);
      return pageOf(f, await listApiKeys(db, f.org, f));
    },
  }),
  defineCommand({
    name: 'key revoke',
    summary: 'Revoke an API key (refused by every service within about a second)',
    usage: '--key-id ID',
    flags: z.strictObject({ 'key-id': idFlag }),
    run: ({ db }, f) => revokeApiKey(db, f['key-id']),
  }),
];
