import { describe, expect, it } from 'vitest';
import { CreateCustomer } from '../schemas/index.js';
import { demoCustomer, PLACES, pick, prng } from './demo-data.js';

const sequence = (seed: number, length: number) => {
  const random = prng(seed);
  return Array.from({ length }, () => random());
};

describe('demo data', () => {
  it('draws the same numbers from the same seed, and other numbers from another seed', () => {
    expect(sequence(7007, 50)).toEqual(sequence(7007, 50));
    expect(sequence(7007, 50)).not.toEqual(sequence(8007, 50));
    // a seed past 2^32 wraps, as the unsigned state does
    expect(sequence(2 ** 32 + 5, 10)).toEqual(sequence(5, 10));
  });

  it('is mulberry32: the published outputs for seeds 1985 and 12345', () => {
    // the raw 32-bit outputs other mulberry32 implementations give for these seeds
    const random = prng(1985);
    expect([random() * 2 ** 32, random() * 2 ** 32]).toEqual([3527837133, 3112574143]);
    expect(prng(12345)()).toBe(0.9797282677609473);
  });

  it('draws numbers in [0, 1), spread over the whole range', () => {
    const numbers = sequence(1, 10_000);
    expect(numbers.every((n) => n >= 0 && n < 1)).toBe(true);
    expect(new Set(numbers).size).toBe(numbers.length);
    expect(Math.min(...numbers)).toBeLessThan(0.01);
    expect(Math.max(...numbers)).toBeGreaterThan(0.99);
    const mean = numbers.reduce((sum, n) => sum + n, 0) / numbers.length;
    expect(mean).toBeGreaterThan(0.48);
    expect(mean).toBeLessThan(0.52);
  });

  it('picks the first item at 0 and the last just below 1', () => {
    const items = ['a', 'b', 'c'];
    expect(pick(() => 0, items)).toBe('a');
    expect(pick(() => 0.34, items)).toBe('b');
    expect(pick(() => 0.999_999, items)).toBe('c');
  });

  it('makes the same customers from the same seed, each one valid', () => {
    const first = prng(1007);
    const second = prng(1007);
    for (let index = 0; index < 64; index++) {
      const customer = demoCustomer(first, index);
      expect(demoCustomer(second, index)).toEqual(customer);
      expect(() => CreateCustomer.parse(customer), `customer ${index}`).not.toThrow();
      expect(customer.name).toMatch(/^[A-Z][a-z]+ [A-Z][a-z]+ (Inc\.|Ltd\.|LLC|Corp\.|Co\.)$/);
      expect(customer.contact_name).toMatch(/^\S+ \S+$/);
      expect(customer.email).toMatch(new RegExp(`^billing\\+${index}@[a-z]{1,20}\\.example$`));
      expect(customer.address_line1).toMatch(/^[1-9]\d\d (King|Main|Queen|Market|Bay) St$/);
      expect(customer.address_line2 ?? 'Suite 100').toMatch(/^Suite [1-8]\d\d$/);
    }
  });

  it('keeps street numbers in 100-999 and suites in 100-899 at both ends of the draw', () => {
    const low = demoCustomer(() => 0, 1);
    expect(low.address_line1).toBe('100 King St');
    expect(low.address_line2).toBe('Suite 100');
    const high = demoCustomer(() => 0.999_999_999, 1);
    expect(high.address_line1).toBe('999 Bay St');
    expect(high.address_line2).toBeNull();
    // a draw just under 0.3 still gives a suite, its highest number
    expect(demoCustomer(() => 0.299_999, 1).address_line2).toBe('Suite 339');
    expect(demoCustomer(() => 0.3, 1).address_line2).toBeNull();
  });

  it('names each contact by a given name, then a family name', () => {
    const given = [
      'Amélie',
      'Ben',
      'Chloé',
      'Dev',
      'Élodie',
      'Farah',
      'Gabriel',
      'Hana',
      'Ivan',
      'Jade',
      'Kofi',
      'Léa',
    ];
    const family = [
      'Tremblay',
      'Nguyen',
      'Smith',
      'Gagnon',
      'Patel',
      'Roy',
      'Brown',
      'Côté',
      'Singh',
      'Martin',
      'Okafor',
      'Lee',
    ];
    const random = prng(5);
    const seen = new Set<string>();
    for (let index = 0; index < 200; index++) {
      const [first, last] = demoCustomer(random, index).contact_name.split(' ');
      expect(given).toContain(first);
      expect(family).toContain(last);
      seen.add(last!);
    }
    expect(seen.size).toBe(family.length);
  });

  it('names each company by a prefix, a line of business and a legal form', () => {
    const prefixes = [
      'Aurora',
      'Birch',
      'Cedar',
      'Dune',
      'Ember',
      'Fjord',
      'Granite',
      'Heron',
      'Iris',
      'Juniper',
      'Kestrel',
      'Lumen',
    ];
    const businesses = [
      'Logistics',
      'Studios',
      'Health',
      'Foods',
      'Energy',
      'Labs',
      'Retail',
      'Media',
      'Consulting',
      'Finance',
    ];
    const random = prng(9);
    const seen = new Set<string>();
    for (let index = 0; index < 200; index++) {
      const [prefix, business, form] = demoCustomer(random, index).name.split(' ');
      expect(prefixes).toContain(prefix);
      expect(businesses).toContain(business);
      expect(['Inc.', 'Ltd.', 'LLC', 'Corp.', 'Co.']).toContain(form);
      seen.add(business!);
      seen.add(form!);
    }
    expect(seen.size).toBe(businesses.length + 5);
  });

  it('places customers round the places in turn, with their country rules', () => {
    const random = prng(3);
    for (let index = 0; index < 64; index++) {
      const customer = demoCustomer(random, index);
      const place = PLACES[index % PLACES.length]!;
      expect(customer).toMatchObject({
        city: place.city,
        state_province: place.state,
        postal_code: place.postal,
        country: place.country,
      });
      const last4 = String(1000 + index).slice(-4);
      expect(customer.phone).toBe(`+1-${place.country === 'CA' ? '416' : '212'}-555-${last4}`);
      expect(customer.tax_id).toBe(place.country === 'CA' ? `${100000000 + index * 7919} RT0001` : null);
      expect(customer.tax_exempt).toBe(index % 17 === 5);
      expect(customer.notes).toBe(index % 3 === 0 ? 'Imported from the demo seed.' : null);
    }
  });

  it('gives some customers a second address line and some none', () => {
    const random = prng(11);
    const lines = Array.from({ length: 64 }, (_, index) => demoCustomer(random, index).address_line2);
    expect(lines.filter((line) => line === null).length).toBeGreaterThan(30);
    expect(lines.filter((line) => line !== null).length).toBeGreaterThan(5);
  });
});
