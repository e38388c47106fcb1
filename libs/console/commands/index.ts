import type { Command } from '../command.js';
import { alertCommands } from './alert.js';
import { billingCommands } from './billing.js';
import { clickhouseCommands } from './clickhouse.js';
import { creditCommands } from './credit.js';
import { creditNoteCommands } from './credit-note.js';
import { customerCommands } from './customer.js';
import { entitlementCommands } from './entitlement.js';
import { invoiceCommands } from './invoice.js';
import { keyCommands } from './key.js';
import { migrateCommand } from './migrate.js';
import { orgCommands } from './org.js';
import { paymentCommands } from './payment.js';
import { productCommands } from './product.js';
import { seedCommand } from './seed.js';
import { subscriptionCommands } from './subscription.js';
import { webhookEndpointCommands } from './webhook-endpoint.js';

/** Every console command; each module owns one area. */
export const COMMANDS: Command[] = [
  migrateCommand,
  ...orgCommands,
  ...keyCommands,
  seedCommand,
  ...productCommands,
  ...customerCommands,
  ...creditCommands,
  ...alertCommands,
  ...entitlementCommands,
  ...subscriptionCommands,
  ...billingCommands,
  ...invoiceCommands,
  ...paymentCommands,
  ...creditNoteCommands,
  ...webhookEndpointCommands,
  ...clickhouseCommands,
] as Command[];
