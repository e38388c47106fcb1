import { describe, expect, it, vi } from 'vitest';
import { displayAmount, displayMoney, displayQuantity } from './index.js';

/** Intl's no-break spaces, as plain spaces to read. */
const spaced = (text: string) => text.replace(/[\u00a0\u202f]/g, ' ');

describe('French figures', () => {
  it('writes an amount with two decimals and a quantity without, whichever of the same text came first', () => {
    expect(displayAmount('12.0000', 'fr-CA')).toBe('12,00');
    expect(displayQuantity('12.0000', 'fr-CA')).toBe('12');
    expect(displayQuantity('7.5000', 'fr-CA')).toBe('7,5');
    expect(displayAmount('7.5000', 'fr-CA')).toBe('7,50');
  });

  it("writes money to its currency's minor unit: no decimals for yen, three for dinars, every significant digit", () => {
    expect(spaced(displayMoney('1200.00000000', 'JPY', 'fr-CA'))).toBe('1 200 ¥');
    expect(spaced(displayMoney('1.50000000', 'KWD', 'fr-CA'))).toBe('1,500 KWD');
    expect(spaced(displayMoney('0.00125000', 'JPY', 'fr-CA'))).toBe('0,00125 ¥');
    expect(spaced(displayMoney('1.50000000', 'CAD', 'fr-CA'))).toBe('1,50 $');
  });

  it('keeps a code Intl refuses apart from its number by a no-break space, as Intl spaces its own', () => {
    // a plain space would let a line break part "5,00" from "AB1" on a page or in the PDF
    expect(displayMoney('5.00000000', 'AB1', 'fr-CA')).toBe('5,00\u00a0AB1');
    expect(displayMoney('-1234.50000000', 'AB1', 'fr-CA')).toBe('-1\u00a0234,50\u00a0AB1');
  });
});

describe('dates', () => {
  it("writes the UTC day whatever the process's time zone", async () => {
    const zone = process.env.TZ;
    process.env.TZ = 'America/Vancouver'; // 2026-03-01T00:00Z is still February 28 there
    try {
      vi.resetModules();
      const { displayDate, displayShortDate } = await import('./format.js');
      expect(displayDate('2026-03-01', 'en')).toBe('March 1, 2026');
      expect(displayDate('2026-03-01T00:00:00.000Z', 'fr-CA')).toBe('1 mars 2026');
      expect(displayShortDate('2026-03-01', 'en')).toBe('Mar 1');
      expect(displayShortDate('2026-03-01', 'fr-CA')).toBe('1 mars');
    } finally {
      if (zone === undefined) Reflect.deleteProperty(process.env, 'TZ');
      else process.env.TZ = zone;
    }
  });

  it('writes the UTC day east of UTC too, where local midnight is the day before in UTC', async () => {
    const zone = process.env.TZ;
    process.env.TZ = 'Asia/Tokyo'; // 2026-03-01T00:00 in Tokyo is 2026-02-28T15:00Z
    try {
      vi.resetModules();
      const { displayDate, displayShortDate } = await import('./format.js');
      expect(displayDate('2026-03-01', 'en')).toBe('March 1, 2026');
      expect(displayDate('2026-03-01', 'fr-CA')).toBe('1 mars 2026');
      expect(displayShortDate('2026-03-01T12:00:00Z', 'en')).toBe('Mar 1');
    } finally {
      if (zone === undefined) Reflect.deleteProperty(process.env, 'TZ');
      else process.env.TZ = zone;
    }
  });
});
