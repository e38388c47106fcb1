import { describe, expect, it } from 'vitest';
import { apiOrigin, pagesBaseUrl } from './lookups.js';

const local = { HOST: '127.0.0.1', PORT: 8080 } as const;

describe('console links', () => {
  it('names the api by PUBLIC_BASE_URL without its trailing slashes, else by HOST and PORT', () => {
    expect(apiOrigin({ ...local, PUBLIC_BASE_URL: 'https://billing.example.com//' })).toBe(
      'https://billing.example.com',
    );
    expect(apiOrigin({ ...local, PUBLIC_BASE_URL: undefined })).toBe('http://127.0.0.1:8080');
  });

  it('bases pages for people on PUBLIC_URL, else on the api origin, never with a trailing slash', () => {
    const both = {
      ...local,
      PUBLIC_BASE_URL: 'https://api.example.com/',
      PUBLIC_URL: 'https://pay.example.com/',
    };
    expect(pagesBaseUrl(both)).toBe('https://pay.example.com');
    expect(pagesBaseUrl({ ...both, PUBLIC_URL: undefined })).toBe('https://api.example.com');
    expect(pagesBaseUrl({ ...local, PUBLIC_BASE_URL: undefined, PUBLIC_URL: undefined })).toBe(
      'http://127.0.0.1:8080',
    );
  });
});
