/** Deterministic demo data: the same seed run gives the same names and places. */

export function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    // mulberry32
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}

export const ORGANIZATION_NAMES = [
  'Northwind Cloud',
  'Maple Analytics',
  'Harbour Robotics',
  'Prairie Data Works',
  'Laurentian Software',
  'Cascade Telemetry',
];

const PREFIXES = [
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
const SUFFIXES = [
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
const FORMS = ['Inc.', 'Ltd.', 'LLC', 'Corp.', 'Co.'];
const FIRST = [
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
const LAST = [
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

export interface Place {
  country: 'CA' | 'US';
  state: string;
  city: string;
  postal: string;
}

/** Every Canadian province with a distinct tax treatment, and US states with and without sales tax. */
export const PLACES: Place[] = [
  { country: 'CA', state: 'ON', city: 'Toronto', postal: 'M5V 2T6' },
  { country: 'CA', state: 'ON', city: 'Ottawa', postal: 'K1P 5J2' },
  { country: 'CA', state: 'QC', city: 'Montréal', postal: 'H2Y 1C6' },
  { country: 'CA', state: 'QC', city: 'Québec', postal: 'G1R 4P5' },
  { country: 'CA', state: 'BC', city: 'Vancouver', postal: 'V6B 1A1' },
  { country: 'CA', state: 'AB', city: 'Calgary', postal: 'T2P 1J9' },
  { country: 'CA', state: 'SK', city: 'Saskatoon', postal: 'S7K 0J5' },
  { country: 'CA', state: 'MB', city: 'Winnipeg', postal: 'R3C 4T3' },
  { country: 'CA', state: 'NS', city: 'Halifax', postal: 'B3J 3K9' },
  { country: 'CA', state: 'NB', city: 'Moncton', postal: 'E1C 4B4' },
  { country: 'CA', state: 'NL', city: "St. John's", postal: 'A1C 5M2' },
  { country: 'CA', state: 'PE', city: 'Charlottetown', postal: 'C1A 4P3' },
  { country: 'US', state: 'NY', city: 'New York', postal: '10001' },
  { country: 'US', state: 'CA', city: 'San Francisco', postal: '94105' },
  { country: 'US', state: 'TX', city: 'Austin', postal: '78701' },
  { country: 'US', state: 'WA', city: 'Seattle', postal: '98101' },
  { country: 'US', state: 'OR', city: 'Portland', postal: '97201' },
  { country: 'US', state: 'DE', city: 'Wilmington', postal: '19801' },
  { country: 'US', state: 'IL', city: 'Chicago', postal: '60601' },
  { country: 'US', state: 'MA', city: 'Boston', postal: '02108' },
];

export function demoCustomer(random: () => number, index: number) {
  const place = PLACES[index % PLACES.length]!;
  const company = `${pick(random, PREFIXES)} ${pick(random, SUFFIXES)} ${pick(random, FORMS)}`;
  const first = pick(random, FIRST);
  const last = pick(random, LAST);
  const domain = company
    .toLowerCase()
    .replace(/[^a-z]+/g, '')
    .slice(0, 20);
  return {
    name: company,
    contact_name: `${first} ${last}`,
    email: `billing+${index}@${domain}.example`,
    phone:
      place.country === 'CA'
        ? `+1-416-555-${String(1000 + index).slice(-4)}`
        : `+1-212-555-${String(1000 + index).slice(-4)}`,
    address_line1: `${100 + Math.floor(random() * 900)} ${pick(random, ['King', 'Main', 'Queen', 'Market', 'Bay'])} St`,
    address_line2: random() < 0.3 ? `Suite ${100 + Math.floor(random() * 800)}` : null,
    city: place.city,
    state_province: place.state,
    postal_code: place.postal,
    country: place.country,
    // a few exempt customers (charities, resellers) so EXEMPT tax lines appear
    tax_exempt: index % 17 === 5,
    tax_id: place.country === 'CA' ? `${100000000 + index * 7919} RT0001` : null,
    notes: index % 3 === 0 ? 'Imported from the demo seed.' : null,
  };
}
