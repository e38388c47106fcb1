import { z } from 'zod';
import {
  createOrganization,
  listOrganizations,
  setOrganizationSettings,
  setPlan,
  setRateLimitOverride,
} from '../../organizations/index.js';
import { PLANS } from '../../rate-limit/index.js';
import { currencyCode } from '../../schemas/index.js';
import { defineCommand } from '../command.js';
import { idFlag, integerFlag, textFlag } from '../flags.js';
import { pageFlags, pageOf } from '../lookups.js';

export const orgCommands = [
  defineCommand({
    name: 'org create',
    summary: 'Create an organization',
    usage: '--name NAME [--plan beta|starter|growth|scale] [--payment-terms-days N] [--currency CAD]',
    flags: z.strictObject({
      name: textFlag.max(255),
      plan: z.enum(PLANS).default('beta'),
      'payment-terms-days': integerFlag(0, 365).default(30),
      currency: currencyCode.default('CAD'),
    }),
    run: ({ db }, f) =>
      createOrganization(db, {
        name: f.name,
        plan: f.plan,
        paymentTermsDays: f['payment-terms-days'],
        currency: f.currency,
      }),
  }),
  defineCommand({
    name: 'org list',
    summary: 'Every organization, newest first, with its plan and hourly limit',
    usage: '[--limit 1-100] [--offset N]',
    flags: z.strictObject(pageFlags),
    run: async ({ db }, f) => pageOf(f, await listOrganizations(db, f)),
  }),
  defineCommand({
    name: 'org set-plan',
    summary: "Change an organization's plan (and so its hourly limit)",
    usage: '--org ID --plan beta|starter|growth|scale',
    flags: z.strictObject({ org: idFlag, plan: z.enum(PLANS) }),
    run: ({ db }, f) => setPlan(db, f.org, f.plan),
  }),
  defineCommand({
    name: 'org set',
    summary:
      "Change an organization's settings: --invoice-grace-hours keeps each period's invoice a DRAFT that long after the period ends (0-720, 0: posted at once)",
    usage: '--org ID --invoice-grace-hours N',
    flags: z.strictObject({
      org: idFlag,
      // the range is the organization's rule (422 naming invoice_grace_hours), not the flag's
      'invoice-grace-hours': z
        .string()
        .regex(/^-?\d+$/, 'Must be a whole number.')
        .transform(Number),
    }),
    run: ({ db }, f) => setOrganizationSettings(db, f.org, { invoiceGraceHours: f['invoice-grace-hours'] }),
  }),
  defineCommand({
    name: 'org set-limit',
    summary: "Override an organization's requests per hour ('plan' restores the plan's limit)",
    usage: '--org ID --requests-per-hour N|plan',
    flags: z.strictObject({
      org: idFlag,
      'requests-per-hour': z
        .string()
        .transform((value) => (value === 'plan' ? null : value))
        // the column is a Postgres integer
        .pipe(integerFlag(1, 2_147_483_647).nullable()),
    }),
    run: ({ db }, f) => setRateLimitOverride(db, f.org, f['requests-per-hour']),
  }),
];
