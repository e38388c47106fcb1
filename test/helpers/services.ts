import { inject } from 'vitest';
import type { TestServices } from '../setup/services.js';

export type { TestServices } from '../setup/services.js';

export function testServices(): TestServices {
  return inject('services');
}

/** A name unique to this test file (and run), for databases, topics and key prefixes. */
export function uniqueName(label: string): string {
  const { runPrefix } = testServices();
  return `${runPrefix}${label.replace(/\W+/g, '_')}_${Math.random().toString(36).slice(2, 8)}`.toLowerCase();
}
