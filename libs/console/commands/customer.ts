import { z } from 'zod';
import { addCustomerCredit, moneyInput, parseInput } from '../../billing/index.js';
import { createCustomer } from '../../customers/index.js';
import { getOrganization } from '../../organizations/index.js';
import { CreateCustomer } from '../../schemas/index.js';
import { defineCommand } from '../command.js';
import { booleanFlag, idFlag, referenceFlag, textFlag } from '../flags.js';

const text = z.string().optional();

export const customerCommands = [
  defineCommand({
    name: 'customer create',
    summary: 'Create a customer (the same rules as POST /customers)',
    usage:
      '--org ID --name N [--email E] [--contact-name N] [--phone P] [--address-line1 A] [--address-line2 A] ' +
      '[--city C] [--state-province ON] [--postal-code P] [--country CA] [--tax-exempt] [--tax-id T] [--notes N]',
    flags: z.strictObject({
      org: idFlag,
      name: textFlag,
      email: text,
      'contact-name': text,
      phone: text,
      'address-line1': text,
      'address-line2': text,
      city: text,
      'state-province': text,
      'postal-code': text,
      country: text,
      'tax-exempt': booleanFlag,
      'tax-id': text,
      notes: text,
    }),
    run: async ({ db }, f) => {
      const input = parseInput(CreateCustomer, {
        name: f.name,
        email: f.email,
        contact_name: f['contact-name'],
        phone: f.phone,
        address_line1: f['address-line1'],
        address_line2: f['address-line2'],
        city: f.city,
        state_province: f['state-province'],
        postal_code: f['postal-code'],
        country: f.country,
        tax_exempt: f['tax-exempt'],
        tax_id: f['tax-id'],
        notes: f.notes,
      });
      await getOrganization(db, f.org);
      return createCustomer(db, f.org, input);
    },
  }),
  defineCommand({
    name: 'customer add-credit',
    summary:
      "Add to a customer's credit balance; the next posted invoice consumes it as a CREDIT_MEMO. Repeated with the same --reference it adds nothing again; without one each run adds again",
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
