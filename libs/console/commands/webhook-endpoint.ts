import { z } from 'zod';
import { getOrganization } from '../../organizations/index.js';
import { WEBHOOK_ENDPOINT_STATUSES, WebhookEndpoint } from '../../schemas/index.js';
import { listEndpoints } from '../../webhooks/index.js';
import { defineCommand } from '../command.js';
import { idFlag } from '../flags.js';
import { pageFlags, publicPage } from '../lookups.js';

export const webhookEndpointCommands = [
  defineCommand({
    name: 'webhook-endpoint list',
    summary:
      "An organization's webhook endpoints, newest first, as GET /webhook-endpoints answers (no secret)",
    usage: `--org ID [--status ${WEBHOOK_ENDPOINT_STATUSES.join('|')}] [--limit 1-100] [--offset N]`,
    flags: z.strictObject({
      org: idFlag,
      status: z.enum(WEBHOOK_ENDPOINT_STATUSES).optional(),
      ...pageFlags,
    }),
    run: async ({ db }, f) => {
      await getOrganization(db, f.org);
      return publicPage(WebhookEndpoint, f, await listEndpoints(db, f.org, { status: f.status }, f));
    },
  }),
];
