import { z } from 'zod';
import { getCustomer, listCustomers } from '../../customers/index.js';
import { integerId } from '../../schemas/index.js';
import { customerLocale } from '../locale.js';
import { customerActivity } from '../read-models/customer-activity.js';
import { defineTool, toolLimit } from './tool.js';

export const listCustomersTool = defineTool({
  name: 'list_customers',
  title: 'Recent customers',
  description:
    'The most recently created customers, newest first, each with the locale to write to them in ' +
    '(derived from country and province: fr-CA in Quebec, en-CA elsewhere in Canada, en-US in the US) ' +
    'and whether they are tax-exempt.',
  input: z.strictObject({ limit: toolLimit }),
  async run({ limit }, { db, orgId }) {
    const { data, total } = await listCustomers(db, orgId, { limit, offset: 0 });
    return {
      total,
      returned: data.length,
      customers: data.map((customer) => ({
        id: customer.id,
        name: customer.name,
        email: customer.email,
        city: customer.city,
        state_province: customer.state_province,
        country: customer.country,
        locale: customerLocale(customer.country, customer.state_province),
        tax_exempt: customer.tax_exempt,
        credit_balance: customer.credit_balance,
        created_at: customer.created_at,
      })),
    };
  },
});

export const getCustomerTool = defineTool({
  name: 'get_customer',
  title: 'One customer',
  description:
    'One customer by id, with its locale, its open invoices (POSTED or PARTIALLY_PAID: count, ' +
    'balance and overdue count per currency) and its subscriptions counted by status.',
  input: z.strictObject({
    customer_id: integerId.describe('The customer id (an integer).'),
  }),
  async run({ customer_id }, { db, orgId, today }) {
    const customer = await getCustomer(db, orgId, customer_id);
    const activity = await customerActivity(db, orgId, customer_id, today);
    return {
      customer: { ...customer, locale: customerLocale(customer.country, customer.state_province) },
      ...activity,
    };
  },
});
