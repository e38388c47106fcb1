import { z } from 'zod';
import { moneyInput } from '../../billing/index.js';
import { createProduct, listProducts, NewPriceTier, updateProduct } from '../../catalog/index.js';
import { getOrganization } from '../../organizations/index.js';
import {
  BILLING_PERIODS,
  PRICING_MODELS,
  PRICING_MODES,
  PRICING_SCHEMES,
  PRICING_TYPES,
  PRODUCT_CATEGORIES,
  PRODUCT_TYPES,
  Product,
} from '../../schemas/index.js';
import { defineCommand } from '../command.js';
import { booleanFlag, booleanValue, fieldsOf, idFlag, jsonFlag, textFlag } from '../flags.js';
import { pageFlags, publicPage } from '../lookups.js';

export const productCommands = [
  defineCommand({
    name: 'product create',
    summary: 'Create a catalog product; a tiered price takes --pricing-mode and --tiers',
    usage:
      '--org ID --name N --unit-price D --pricing-type one_time|recurring|usage [--pricing-model per_unit|flat_fee] ' +
      '[--pricing-scheme linear|tiered] [--pricing-mode flat|volume|graduated] ' +
      `[--tiers '[{"up_to":"100","unit_price":"1.00"},{"up_to":null,"unit_price":"0.50","flat_fee":"0"}]'] ` +
      '[--currency CAD] [--category software|service|usage|hardware|support|other] [--sku S] [--description D] ' +
      '[--unit-label L] [--billing-period monthly|quarterly|annually] [--product-type standard|bundle] ' +
      `[--external-id X] [--metadata '{"k":"v"}'] [--inactive]`,
    flags: z.strictObject({
      org: idFlag,
      name: textFlag.max(255),
      'unit-price': moneyInput,
      'pricing-type': z.enum(PRICING_TYPES),
      'pricing-model': z.enum(PRICING_MODELS).optional(),
      'pricing-scheme': z.enum(PRICING_SCHEMES).optional(),
      'pricing-mode': z.enum(PRICING_MODES).optional(),
      tiers: jsonFlag(z.array(NewPriceTier)).optional(),
      currency: z.string().optional(),
      category: z.enum(PRODUCT_CATEGORIES).optional(),
      sku: z.string().optional(),
      description: z.string().optional(),
      'unit-label': z.string().optional(),
      'billing-period': z.enum(BILLING_PERIODS).optional(),
      'product-type': z.enum(PRODUCT_TYPES).optional(),
      'external-id': z.string().optional(),
      metadata: jsonFlag(z.record(z.string(), z.unknown())).optional(),
      inactive: booleanFlag,
    }),
    flagOfField: { default_billing_period: 'billing-period', is_active: 'inactive' },
    run: ({ db }, f) =>
      db.transaction((tx) =>
        createProduct(tx, f.org, {
          name: f.name,
          unit_price: f['unit-price'],
          pricing_type: f['pricing-type'],
          pricing_model: f['pricing-model'],
          pricing_scheme: f['pricing-scheme'],
          pricing_mode: f['pricing-mode'],
          tiers: f.tiers,
          currency: f.currency,
          category: f.category,
          sku: f.sku,
          description: f.description,
          unit_label: f['unit-label'],
          default_billing_period: f['billing-period'],
          product_type: f['product-type'],
          external_id: f['external-id'],
          metadata: f.metadata,
          is_active: !f.inactive,
        }),
      ),
  }),
  defineCommand({
    name: 'product list',
    summary:
      "An organization's products, newest first, as GET /products answers (--active: only active or inactive)",
    usage: '--org ID [--active true|false] [--limit 1-100] [--offset N]',
    flags: z.strictObject({ org: idFlag, active: booleanValue.optional(), ...pageFlags }),
    run: async ({ db }, f) => {
      await getOrganization(db, f.org);
      return publicPage(Product, f, await listProducts(db, f.org, { active: f.active }, f));
    },
  }),
  defineCommand({
    name: 'product update',
    summary:
      'Rename, describe or (de)activate a product: --active false keeps it off new subscriptions, ' +
      'those that have it go on billing it. The price never changes here: subscriptions copied the ' +
      'unit price when created but tiers are read at billing time, so a new price would silently ' +
      'rebill running subscriptions; create another product instead',
    usage:
      '--id ID [--org ID] [--name N] [--description D] [--sku S] [--unit-label L] [--external-id X] [--active true|false]',
    flags: z.strictObject({
      id: idFlag,
      org: idFlag.optional(),
      name: z.string().optional(),
      description: z.string().optional(),
      sku: z.string().optional(),
      'unit-label': z.string().optional(),
      'external-id': z.string().optional(),
      active: booleanValue.optional(),
    }),
    flagOfField: { is_active: 'active' },
    run: ({ db }, { id, org, active, ...fields }) =>
      db.transaction((tx) =>
        updateProduct(
          tx,
          { productId: id, orgId: org },
          {
            ...fieldsOf(fields, ['name', 'description', 'sku', 'unit-label', 'external-id']),
            is_active: active,
          },
        ),
      ),
  }),
];
