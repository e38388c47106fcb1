import { describe, expect, it } from 'vitest';
import { isOverdue } from './overdue.js';

describe('isOverdue', () => {
  const invoice = { status: 'POSTED' as const, due_date: '2026-03-01', balance: '10.00000000' };

  it('is open, past due and unpaid, exactly as the spec derives it', () => {
    expect(isOverdue(invoice, '2026-03-02')).toBe(true);
    expect(isOverdue({ ...invoice, status: 'PARTIALLY_PAID' }, '2026-03-02')).toBe(true);
    expect(isOverdue({ ...invoice, balance: '0.00000001' }, '2026-03-02')).toBe(true);
  });

  it('is not overdue on its due date, nor when paid, settled or not yet posted', () => {
    expect(isOverdue(invoice, '2026-03-01')).toBe(false);
    expect(isOverdue({ ...invoice, balance: '0.00000000' }, '2026-03-02')).toBe(false);
    expect(isOverdue({ ...invoice, status: 'PAID', balance: '0.00000000' }, '2026-03-02')).toBe(false);
    expect(isOverdue({ ...invoice, status: 'PAID' }, '2026-03-02')).toBe(false);
    expect(isOverdue({ ...invoice, status: 'DRAFT' }, '2026-03-02')).toBe(false);
    expect(isOverdue({ ...invoice, status: 'REFUNDED' }, '2026-03-02')).toBe(false);
  });
});
