import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { describeTool, LATEST_PROTOCOL_VERSION, negotiateProtocolVersion } from './server.js';
import { MCP_TOOLS } from './tools/index.js';

describe('negotiateProtocolVersion', () => {
  it('keeps a version we speak and answers our latest otherwise', () => {
    for (const version of ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05']) {
      expect(negotiateProtocolVersion(version)).toBe(version);
    }
    expect(LATEST_PROTOCOL_VERSION).toBe('2025-11-25');
    expect(negotiateProtocolVersion('2024-10-07')).toBe('2025-11-25');
    expect(negotiateProtocolVersion(undefined)).toBe('2025-11-25');
    expect(negotiateProtocolVersion(20251125)).toBe('2025-11-25');
  });
});

describe('tool descriptions', () => {
  it('publish each zod input schema as an object JSON Schema without the dialect marker', () => {
    for (const tool of MCP_TOOLS) {
      const described = describeTool(tool);
      expect(described.inputSchema.type).toBe('object');
      expect(described.inputSchema).not.toHaveProperty('$schema');
      expect(described.inputSchema).toMatchObject({ additionalProperties: false });
    }
  });

  it('describe defaults as optional: limit is never required', () => {
    const described = describeTool({
      name: 't',
      title: 'T',
      description: 'd',
      input: z.strictObject({ id: z.number(), limit: z.number().default(25) }),
      run: async () => ({}),
    });
    expect(described.inputSchema.required).toEqual(['id']);
  });
});
