import type { LookupAddress } from 'node:dns';
import { describe, expect, it } from 'vitest';
import { AddressRefusedError, guardedLookup, literalAddressOf, refusalFor } from './ssrf-guard.js';

const resolver = (answers: Record<string, { address: string; family: number }[]>) => async (host: string) =>
  answers[host] ?? [];

function lookup(
  url: string,
  allowLocalhost: boolean,
  answers: Record<string, { address: string; family: number }[]>,
  options: { all?: boolean; family?: number } = {},
): Promise<{ error: Error | null; address: string | LookupAddress[]; family?: number }> {
  const parsed = new URL(url);
  return new Promise((resolve) =>
    guardedLookup(parsed, allowLocalhost, resolver(answers))(
      parsed.hostname,
      options,
      (error, address, family) => resolve({ error, address, ...(family === undefined ? {} : { family }) }),
    ),
  );
}

describe('guardedLookup', () => {
  it('answers a public address as the system lookup would, in both calling styles', async () => {
    const answers = { 'hooks.example.com': [{ address: '93.184.216.34', family: 4 }] };
    expect(await lookup('https://hooks.example.com/', false, answers)).toEqual({
      error: null,
      address: '93.184.216.34',
      family: 4,
    });
    expect(await lookup('https://hooks.example.com/', false, answers, { all: true })).toEqual({
      error: null,
      address: [{ address: '93.184.216.34', family: 4 }],
    });
  });

  it('refuses the name when any of its addresses is forbidden', async () => {
    const answers = {
      'mixed.example.com': [
        { address: '93.184.216.34', family: 4 },
        { address: '169.254.169.254', family: 4 },
      ],
    };
    const { error } = await lookup('https://mixed.example.com/', true, answers, { all: true });
    expect(error).toBeInstanceOf(AddressRefusedError);
    expect(error!.message).toBe(
      'Refused: mixed.example.com resolves to a link-local address; webhooks are delivered to public addresses only.',
    );
  });

  it('checks only the family asked for', async () => {
    const answers = {
      'dual.example.com': [
        { address: '2606:4700::1', family: 6 },
        { address: '10.0.0.1', family: 4 },
      ],
    };
    expect(await lookup('https://dual.example.com/', false, answers, { family: 6 })).toEqual({
      error: null,
      address: '2606:4700::1',
      family: 6,
    });
    // the address of the other family was not checked, so it is never handed out
    expect(await lookup('https://dual.example.com/', false, answers, { family: 6, all: true })).toEqual({
      error: null,
      address: [{ address: '2606:4700::1', family: 6 }],
    });
    expect((await lookup('https://dual.example.com/', false, answers, { family: 4 })).error).toBeInstanceOf(
      AddressRefusedError,
    );
  });

  it('checks only the IPv4 addresses when asked for family 4', async () => {
    const answers = {
      'dual.example.com': [
        { address: '::1', family: 6 },
        { address: '93.184.216.34', family: 4 },
      ],
    };
    expect(await lookup('https://dual.example.com/', false, answers, { family: 4 })).toEqual({
      error: null,
      address: '93.184.216.34',
      family: 4,
    });
  });

  it("passes the resolver's own failure on as it is", async () => {
    const failure: NodeJS.ErrnoException = new Error('getaddrinfo EAI_AGAIN hooks.example.com');
    failure.code = 'EAI_AGAIN';
    const parsed = new URL('https://hooks.example.com/');
    const outcome = await new Promise<{ error: Error | null; address: string | LookupAddress[] }>((resolve) =>
      guardedLookup(parsed, false, async () => Promise.reject(failure))(
        parsed.hostname,
        {},
        (error, address) => resolve({ error, address }),
      ),
    );
    expect(outcome).toEqual({ error: failure, address: '' });
  });

  it('lets loopback through only for an allowed localhost URL', async () => {
    const answers = {
      localhost: [{ address: '127.0.0.1', family: 4 }],
      'evil.example.com': [{ address: '127.0.0.1', family: 4 }],
    };
    expect((await lookup('http://localhost:3000/', true, answers)).error).toBeNull();
    expect((await lookup('http://localhost:3000/', false, answers)).error).toBeInstanceOf(
      AddressRefusedError,
    );
    expect((await lookup('https://evil.example.com/', true, answers)).error).toBeInstanceOf(
      AddressRefusedError,
    );
  });

  it('refuses an allowed localhost URL whose name resolves to anything but a loopback address', async () => {
    const answers = {
      localhost: [
        { address: '127.0.0.1', family: 4 },
        { address: '10.0.0.1', family: 4 },
      ],
    };
    const { error } = await lookup('http://localhost:3000/', true, answers, { all: true });
    expect(error).toBeInstanceOf(AddressRefusedError);
    expect(error!.message).toBe(
      'Refused: localhost resolves to a private address; webhooks are delivered to public addresses only.',
    );
  });

  it('reports a name without addresses as ENOTFOUND', async () => {
    const { error } = await lookup('https://missing.example.com/', false, {});
    expect((error as NodeJS.ErrnoException).code).toBe('ENOTFOUND');
  });
});

describe('literal addresses', () => {
  it('are found in the URL, brackets removed, and checked without a lookup', () => {
    expect(literalAddressOf(new URL('https://10.0.0.1/x'))).toBe('10.0.0.1');
    expect(literalAddressOf(new URL('http://[::1]:8080/'))).toBe('::1');
    expect(literalAddressOf(new URL('https://hooks.example.com/'))).toBeUndefined();
    expect(refusalFor(new URL('https://10.0.0.1/x'), '10.0.0.1', true)?.message).toBe(
      'Refused: 10.0.0.1 is a private address; webhooks are delivered to public addresses only.',
    );
    expect(refusalFor(new URL('http://127.0.0.1:1/'), '127.0.0.1', true)).toBeUndefined();
    expect(refusalFor(new URL('http://[::1]:1/'), '::1', true)).toBeUndefined();
    expect(refusalFor(new URL('http://[::1]:1/'), '::1', false)).toBeInstanceOf(AddressRefusedError);
    expect(refusalFor(new URL('http://[64:ff9b::7f00:1]:1/'), '64:ff9b::7f00:1', true)).toBeInstanceOf(
      AddressRefusedError,
    );
    expect(refusalFor(new URL('https://8.8.8.8/'), '8.8.8.8', false)).toBeUndefined();
    // an IPv6 literal is named without its brackets, as the address it is
    const refused = refusalFor(new URL('https://[fd00::7]:8443/'), 'fd00::7', false);
    expect(refused?.message).toBe(
      'Refused: fd00::7 is a private address; webhooks are delivered to public addresses only.',
    );
    expect(refused).toMatchObject({
      name: 'AddressRefusedError',
      code: 'ERR_WEBHOOK_ADDRESS_REFUSED',
      host: 'fd00::7',
      address: 'fd00::7',
      range: 'private',
    });
  });
});
