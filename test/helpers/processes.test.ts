import { describe, expect, it } from 'vitest';
import { freePort } from './processes.js';

describe('freePort', () => {
  it('hands out a thousand different ports in a row, all below the ephemeral range', () => {
    const ports = Array.from({ length: 1_000 }, () => freePort());
    expect(new Set(ports).size).toBe(1_000);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(32_768);
    }
  });
});
