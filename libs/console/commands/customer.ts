import { z } from 'zod';
import { addCustomerCredit, moneyInput, parseInput } from '../../billing/index.js';
import { createCustomer, getCustomer, listCustomers, updateCustomer } from '../../customers/index.js';
import { getOrganization } from '../../organizations/index.js';
import { CreateCustomer, Customer, UpdateCustomer } from '../../schemas/index.js';
import { defineCommand } from '../command.js';
import { booleanValue, fieldsOf, idFlag, referenceFlag, textFlag } from '../flags.js';
import { organizationOf, pageFlags, publicPage } from '../lookups.js';

const text = z.string().optional();

/** The flags of a customer's fields but its name; each sets the CreateCustomer field of its name. */
const fieldFlags = {
  email: text,
  'contact-name': text,
  phone: text,
  'address-line1': text,
  'address-line2': text,
  city: text,
  'state-province': text,
  'postal-code': text,
  country: text,
  'tax-exempt': booleanValue.optional(),
  'tax-id': text,
  notes: text,
};
const FIELDS = ['name', ...Object.keys(fieldFlags)] as (keyof typeof fieldFlags | 'name')[];
const FIELD_USAGE =
  '[--email E] [--contact-name N] [--phone P] [--address-line1 A] [--address-line2 A] [--city C] ' +
  '[--state-province ON] [--postal-code P] [--country CA] [--tax-exempt true|false] [--tax-id T] [--notes N]';

/** An empty value empties a field that may be empty (`--email ''`); elsewhere it is refused as it is. */
function emptiedToNull(fields: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(fields).map(([field, value]) => [
      field,
      value === '' && UpdateCustomer.shape[field as keyof UpdateCustomer]?.safeParse(null).success
        ? null
        : value,
    ]),
  );
}

export const customerCommands = [
  defineCommand({
    name: 'customer create',
    summary: 'Create a customer (the same rules as POST /customers)',
    usage: `--org ID --name N ${FIELD_USAGE}`,
    flags: z.strictObject({ org: idFlag, name: textFlag, ...fieldFlags }),
    run: async ({ db }, f) => {
      const input = parseInput(CreateCustomer, fieldsOf(f, FIELDS));
      await getOrganization(db, f.org);
      return createCustomer(db, f.org, input);
    },
  }),
  defineCommand({
    name: 'customer list',
    summary: "An organization's customers, newest first, as GET /customers answers",
    usage: '--org ID [--limit 1-100] [--offset N]',
    flags: z.strictObject({ org: idFlag, ...pageFlags }),
    run: async ({ db }, f) => {
      await getOrganization(db, f.org);
      return publicPage(Customer, f, await listCustomers(db, f.org, f));
    },
  }),
  defineCommand({
    name: 'customer show',
    summary: 'One customer, as GET /customers/{id} answers (with --org, only within that organization)',
    usage: '--id ID [--org ID]',
    flags: z.strictObject({ id: idFlag, org: idFlag.optional() }),
    run: async ({ db }, f) =>
      z.encode(Customer, await getCustomer(db, await organizationOf(db, 'customers', f.id, f.org), f.id)),
  }),
  defineCommand({
    name: 'customer update',
    summary:
      "Change a customer's fields, with the rules of customer create: only the flags given change, " +
      "and an empty value (--email '') empties a field that may be empty",
    usage: `--id ID [--org ID] [--name N] ${FIELD_USAGE}`,
    flags: z.strictObject({ id: idFlag, org: idFlag.optional(), name: text, ...fieldFlags }),
    run: async ({ db }, f) => {
      const input = parseInput(UpdateCustomer, emptiedToNull(fieldsOf(f, FIELDS)));
      return updateCustomer(db, { customerId: f.id, orgId: f.org }, input);
    },
  }),
  defineCommand({
    name: 'customer add-credit',
    summary:
      "Add to a customer's credit balance (a promotional credit grant, effective now, never expiring: see `credit grant`); posted invoices consume it as CREDIT_MEMOs. Repeated with the same --reference it adds nothing again; without one each run adds again",
    usage: '--id ID --amount D [--reference R] [--org ID]',
    flags: z.strictObject({
      id: idFlag,
      amount: moneyInput,
      reference: referenceFlag.optional(),
      org: idFlag.optional(),
    }),
    run: ({ db }, f) =>
      db.transaction((tx) =>
        addCustomerCredit(tx, { customerId: f.id, orgId: f.org, amount: f.amount, reference: f.reference }),
      ),
  }),
];
