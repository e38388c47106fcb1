import { describe, expect, it } from 'vitest';
import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { createSubscription, type NewSubscription } from './subscription-lifecycle.js';

/*
 * A new subscription's request is judged on the input alone, before any record is read: each
 * bound refuses the first value past it with a 422 naming the field, and takes the value at it
 * (which goes on to read the customer, here a store that answers nothing).
 */

const READ = new Error('read the store');
const noStore: Queryable = {
  query: () => Promise.reject(READ),
};

const base: NewSubscription = { customer_id: 1, items: [{ product_id: 2 }] };

/** The request's 422 details, or 'accepted' when it got as far as reading the store. */
async function judged(input: Partial<NewSubscription>): Promise<unknown> {
  const error = await createSubscription(noStore, 1, { ...base, ...input }).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (error === READ) return 'accepted';
  expect(error).toBeInstanceOf(ApiError);
  expect((error as ApiError).code).toBe('VALIDATION_ERROR');
  return (error as ApiError).details?.map(({ field, code }) => [field, code]);
}

const item = (overrides: Partial<NewSubscription['items'][number]> = {}) => ({ product_id: 2, ...overrides });

describe('a new subscription: bounds of the request', () => {
  it('trial_days from 0 to 730', async () => {
    expect(await judged({ trial_days: 730 })).toBe('accepted');
    expect(await judged({ trial_days: 0 })).toBe('accepted');
    expect(await judged({ trial_days: 731 })).toEqual([['trial_days', 'out_of_range']]);
    expect(await judged({ trial_days: -1 })).toEqual([['trial_days', 'out_of_range']]);
  });

  it('a termed initial term from 1 to 120 months', async () => {
    const termed = (months: number) => judged({ term_type: 'termed', initial_term_months: months });
    expect(await termed(120)).toBe('accepted');
    expect(await termed(1)).toBe('accepted');
    expect(await termed(121)).toEqual([['initial_term_months', 'out_of_range']]);
    expect(await termed(0)).toEqual([['initial_term_months', 'out_of_range']]);
  });

  it('a title of at most 255 characters', async () => {
    expect(await judged({ title: 't'.repeat(255) })).toBe('accepted');
    expect(await judged({ title: 't'.repeat(256) })).toEqual([['title', 'too_long']]);
  });

  it('1 to 100 items, each of quantity 0 to 1,000,000', async () => {
    expect(await judged({ items: Array.from({ length: 100 }, () => item()) })).toBe('accepted');
    expect(await judged({ items: Array.from({ length: 101 }, () => item()) })).toEqual([
      ['items', 'too_long'],
    ]);
    expect(await judged({ items: [] })).toEqual([['items', 'too_short']]);
    expect(await judged({ items: [item({ quantity: 1_000_000 }), item({ quantity: 0 })] })).toBe('accepted');
    expect(await judged({ items: [item(), item({ quantity: 1_000_001 })] })).toEqual([
      ['items.1.quantity', 'out_of_range'],
    ]);
    expect(await judged({ items: [item({ quantity: -1 })] })).toEqual([['items.0.quantity', 'out_of_range']]);
  });

  it('a customer and products named by positive ids', async () => {
    expect(await judged({ customer_id: 0 })).toEqual([['customer_id', 'out_of_range']]);
    expect(await judged({ items: [item({ product_id: 0 })] })).toEqual([
      ['items.0.product_id', 'out_of_range'],
    ]);
  });
});
