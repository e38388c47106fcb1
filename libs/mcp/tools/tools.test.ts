import { describe, expect, it } from 'vitest';
import { MCP_TOOLS } from './index.js';

const inputOf = (name: string) => MCP_TOOLS.find((tool) => tool.name === name)!.input;

describe('tool input schemas', () => {
  it('limit is 1-100 with a default of 25 on every tool that lists', () => {
    for (const name of ['list_customers', 'list_invoices', 'list_products', 'recent_payments']) {
      const input = inputOf(name);
      expect(input.parse({})).toMatchObject({ limit: 25 });
      expect(input.safeParse({ limit: 100 }).success).toBe(true);
      expect(input.safeParse({ limit: 0 }).success).toBe(false);
      expect(input.safeParse({ limit: 101 }).success).toBe(false);
      expect(input.safeParse({ limit: 2.5 }).success).toBe(false);
    }
  });

  it('revenue_summary takes a range of one day, and refuses one that ends before it starts', () => {
    const input = inputOf('revenue_summary');
    expect(input.safeParse({ from: '2026-03-01', to: '2026-03-01' }).success).toBe(true);
    expect(input.safeParse({ from: '2026-03-01', to: '2026-03-02' }).success).toBe(true);
    const reversed = input.safeParse({ from: '2026-03-02', to: '2026-03-01' });
    expect(reversed.success).toBe(false);
    expect(reversed.error?.issues.map((issue) => issue.path)).toEqual([['from']]);
  });

  it('list_invoices takes only the three statuses the spec lists', () => {
    const input = inputOf('list_invoices');
    for (const status of ['POSTED', 'PARTIALLY_PAID', 'PAID'])
      expect(input.safeParse({ status }).success).toBe(true);
    for (const status of ['DRAFT', 'posted', 'OVERDUE'])
      expect(input.safeParse({ status }).success).toBe(false);
  });

  it('tax_lookup wants a two-letter country and a decimal string amount, never a float', () => {
    const input = inputOf('tax_lookup');
    expect(input.parse({ country: 'ca', state_province: 'qc' })).toEqual({
      country: 'CA',
      state_province: 'qc',
    });
    expect(input.safeParse({ country: 'CAN' }).success).toBe(false);
    expect(input.safeParse({ country: 'CA', state_province: 'ON', amount: 19.99 }).success).toBe(false);
    expect(input.safeParse({ country: 'CA', state_province: 'ON', amount: '19.999999999' }).success).toBe(
      false,
    );
    expect(input.safeParse({ country: 'CA', state_province: 'ON', amount: '-1' }).success).toBe(false);
    expect(input.safeParse({ country: 'CA', state_province: 'ON', amount: '19.99' }).success).toBe(true);
    // at most 12 integer digits, as a credit grant's amount; a region names itself in 50 characters
    const largest = '999999999999.99999999';
    expect(input.safeParse({ country: 'FR', amount: largest }).success).toBe(true);
    expect(input.safeParse({ country: 'FR', amount: `9${largest}` }).success).toBe(false);
    expect(input.safeParse({ country: 'FR', state_province: 'x'.repeat(50) }).success).toBe(true);
    expect(input.safeParse({ country: 'FR', state_province: 'x'.repeat(51) }).success).toBe(false);
  });

  it('tax_lookup asks for a region the table knows where tax depends on it', () => {
    const input = inputOf('tax_lookup');
    for (const args of [
      { country: 'CA' },
      { country: 'CA', state_province: 'ZZ' },
      { country: 'US', state_province: 'ZZ' },
    ]) {
      const parsed = input.safeParse(args);
      expect(parsed.success, JSON.stringify(args)).toBe(false);
      expect(parsed.error?.issues.map((issue) => issue.path)).toEqual([['state_province']]);
    }
    expect(input.safeParse({ country: 'FR' }).success).toBe(true);
    expect(input.safeParse({ country: 'US', state_province: 'Texas' }).success).toBe(true);
  });

  it('tax_lookup echoes a written-out province as its code', async () => {
    const tool = MCP_TOOLS.find((candidate) => candidate.name === 'tax_lookup')!;
    const context = { db: undefined as never, orgId: 1, today: '2026-01-01' };
    const input = tool.input.parse({ country: 'CA', state_province: 'Québec' });
    expect(await tool.run(input, context)).toMatchObject({ state_province: 'QC', tax_type: 'GST_QST' });
  });

  it("tax_lookup applies the rate of the invoice date, by default the server's today", async () => {
    const tool = MCP_TOOLS.find((candidate) => candidate.name === 'tax_lookup')!;
    const lookup = (args: object, today: string) =>
      tool.run(tool.input.parse({ country: 'CA', state_province: 'NS', ...args }), {
        db: undefined as never,
        orgId: 1,
        today,
      });
    expect(await lookup({}, '2025-03-31')).toMatchObject({ date: '2025-03-31', rate: '0.15' });
    expect(await lookup({}, '2025-04-01')).toMatchObject({ date: '2025-04-01', rate: '0.14' });
    expect(await lookup({ date: '2025-03-31' }, '2026-01-01')).toMatchObject({
      date: '2025-03-31',
      rate: '0.15',
    });
    expect(tool.input.safeParse({ country: 'CA', date: '2025-02-30' }).success).toBe(false);
  });

  it('revenue_summary refuses a reversed range and non-dates', () => {
    const input = inputOf('revenue_summary');
    expect(input.safeParse({ from: '2026-01-01', to: '2026-01-31' }).success).toBe(true);
    expect(input.safeParse({ from: '2026-02-01', to: '2026-01-31' }).success).toBe(false);
    expect(input.safeParse({ from: 'last month' }).success).toBe(false);
  });
});
