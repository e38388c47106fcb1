import { describe, expect, it } from 'vitest';
import { PARTIAL_FAILURE } from '../command.js';
import { COMMANDS } from './index.js';

/** The command's flags as it reads them: its values, or the flags it refuses. */
function flagsOf(name: string, flags: Record<string, string | true>) {
  const command = COMMANDS.find((c) => c.name === name)!;
  const parsed = command.flags.safeParse(flags);
  return parsed.success
    ? { value: parsed.data }
    : { refused: parsed.error.issues.map((i) => i.path.join('.')) };
}

describe('console command flags', () => {
  it('org create: beta, 30 days of payment terms and CAD when left out; terms from 0 to 365 days', () => {
    expect(flagsOf('org create', { name: 'A' })).toEqual({
      value: { name: 'A', plan: 'beta', 'payment-terms-days': 30, currency: 'CAD' },
    });
    expect(flagsOf('org create', { name: 'A', 'payment-terms-days': '0' })).toMatchObject({
      value: { 'payment-terms-days': 0 },
    });
    expect(flagsOf('org create', { name: 'A', 'payment-terms-days': '365' })).toMatchObject({
      value: { 'payment-terms-days': 365 },
    });
    expect(flagsOf('org create', { name: 'A', 'payment-terms-days': '366' })).toEqual({
      refused: ['payment-terms-days'],
    });
    expect(flagsOf('org create', { name: 'n'.repeat(255) })).toHaveProperty('value');
    expect(flagsOf('org create', { name: 'n'.repeat(256) })).toEqual({ refused: ['name'] });
  });

  it("org set-limit: 1 to a Postgres integer's most, or `plan` for the plan's own limit", () => {
    const limit = (value: string) => flagsOf('org set-limit', { org: '1', 'requests-per-hour': value });
    expect(limit('plan')).toEqual({ value: { org: 1, 'requests-per-hour': null } });
    expect(limit('1')).toEqual({ value: { org: 1, 'requests-per-hour': 1 } });
    expect(limit('2147483647')).toEqual({ value: { org: 1, 'requests-per-hour': 2_147_483_647 } });
    expect(limit('0')).toEqual({ refused: ['requests-per-hour'] });
    expect(limit('2147483648')).toEqual({ refused: ['requests-per-hour'] });
  });

  it('org set: any whole number of grace hours, negative included (the organization judges it)', () => {
    expect(flagsOf('org set', { org: '1', 'invoice-grace-hours': '-1' })).toEqual({
      value: { org: 1, 'invoice-grace-hours': -1 },
    });
    expect(flagsOf('org set', { org: '1', 'invoice-grace-hours': '1.5' })).toEqual({
      refused: ['invoice-grace-hours'],
    });
  });

  it('key create: a live key without a name when left out; a name of at most 255 characters', () => {
    expect(flagsOf('key create', { org: '3' })).toEqual({ value: { org: 3, name: '', environment: 'live' } });
    expect(flagsOf('key create', { org: '3', name: 'k'.repeat(255) })).toHaveProperty('value');
    expect(flagsOf('key create', { org: '3', name: 'k'.repeat(256) })).toEqual({ refused: ['name'] });
  });

  it('payment record, refund create, credit-memo create: a note of at most 1,000 characters', () => {
    const invoice = '0b6f3ad4-2a53-4f6e-9a38-5d0e4e2c3f01';
    for (const name of ['payment record', 'refund create', 'credit-memo create']) {
      expect(flagsOf(name, { invoice, amount: '1', note: 'n'.repeat(1000) }), name).toHaveProperty('value');
      expect(flagsOf(name, { invoice, amount: '1', note: 'n'.repeat(1001) }), name).toEqual({
        refused: ['note'],
      });
    }
  });

  it('seed: 2 organizations when left out, from 1 to 50', () => {
    expect(flagsOf('seed', {})).toEqual({ value: { orgs: 2 } });
    expect(flagsOf('seed', { orgs: '50' })).toEqual({ value: { orgs: 50 } });
    expect(flagsOf('seed', { orgs: '51' })).toEqual({ refused: ['orgs'] });
    expect(flagsOf('seed', { orgs: '0' })).toEqual({ refused: ['orgs'] });
  });

  it('subscription create: trial days 0 to 730, an initial term of 1 to 120 months', () => {
    const create = (flags: Record<string, string>) =>
      flagsOf('subscription create', { org: '1', customer: '1', items: '[]', ...flags });
    expect(create({ 'trial-days': '0', 'initial-term-months': '1' })).toMatchObject({
      value: { 'trial-days': 0, 'initial-term-months': 1 },
    });
    expect(create({ 'trial-days': '730', 'initial-term-months': '120' })).toMatchObject({
      value: { 'trial-days': 730, 'initial-term-months': 120 },
    });
    expect(create({ 'trial-days': '731' })).toEqual({ refused: ['trial-days'] });
    expect(create({ 'initial-term-months': '0' })).toEqual({ refused: ['initial-term-months'] });
    expect(create({ 'initial-term-months': '121' })).toEqual({ refused: ['initial-term-months'] });
  });

  it('subscription cancel and update: neither end nor preview unless asked', () => {
    expect(flagsOf('subscription cancel', { id: '4' })).toEqual({
      value: { id: 4, 'at-period-end': false, 'without-invoicing': false },
    });
    expect(flagsOf('subscription update', { id: '4', items: '[]' })).toEqual({
      value: { id: 4, items: [], preview: false },
    });
  });

  it('billing run: posts unless --draft; batches of 1 to 5000', () => {
    expect(flagsOf('billing run', {})).toEqual({ value: { draft: false } });
    expect(flagsOf('billing run', { draft: true, 'batch-size': '5000' })).toEqual({
      value: { draft: true, 'batch-size': 5000 },
    });
    expect(flagsOf('billing run', { 'batch-size': '5001' })).toEqual({ refused: ['batch-size'] });
    expect(flagsOf('billing run', { 'batch-size': '0' })).toEqual({ refused: ['batch-size'] });
  });

  it.each([
    ['alert list', { org: '1' }],
    ['credit list', { customer: '1' }],
    ['credit-note list', { invoice: '8f0c8f3e-1c1a-4c53-9a3e-2b1d6c7e9a10' }],
    ['customer list', { org: '1' }],
    ['invoice list', { org: '1' }],
  ] as const)('%s: pages of 25 from the start when left out, of 1 to 100', (name, required) => {
    expect(flagsOf(name, required)).toMatchObject({ value: { limit: 25, offset: 0 } });
    expect(flagsOf(name, { ...required, limit: '100', offset: '0' })).toMatchObject({
      value: { limit: 100, offset: 0 },
    });
    expect(flagsOf(name, { ...required, limit: '101' })).toEqual({ refused: ['limit'] });
    expect(flagsOf(name, { ...required, limit: '0' })).toEqual({ refused: ['limit'] });
  });

  it('credit grant: a priority of 0 or more', () => {
    const grant = { customer: '1', amount: '10.00', category: 'paid' };
    expect(flagsOf('credit grant', { ...grant, priority: '0' })).toMatchObject({ value: { priority: 0 } });
    expect(flagsOf('credit grant', { ...grant, reference: 'r'.repeat(256) })).toEqual({
      refused: ['reference'],
    });
  });

  it('billing run exits 3 when a subscription could not be billed, else 0', () => {
    const run = COMMANDS.find((c) => c.name === 'billing run')!;
    expect(run.exitCode?.({ failures: [{ error: 'x' }] })).toBe(PARTIAL_FAILURE);
    expect(run.exitCode?.({ failures: [] })).toBe(0);
    expect(PARTIAL_FAILURE).toBe(3);
  });
});
