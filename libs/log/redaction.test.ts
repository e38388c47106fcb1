import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './index.js';

function logged(object: Record<string, unknown>): string {
  let text = '';
  const destination = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  createLogger({ level: 'info', service: 'test', destination }).info(object, 'logged by hand');
  return text;
}

const SECRET = 'whsec_c2VjcmV0LXRoYXQtbXVzdC1uZXZlci1iZS1sb2dnZWQ';

describe('the logger redacts credentials in objects logged by hand', () => {
  const carriers: Record<string, Record<string, unknown>> = {
    'a bare authorization': { authorization: `Bearer ${SECRET}` },
    "a request's headers": { headers: { authorization: `Bearer ${SECRET}` } },
    "a request's own headers": { req: { headers: { authorization: `Bearer ${SECRET}` } } },
    'an api key, either spelling': { api_key: SECRET, apiKey: SECRET },
    "an endpoint's secrets": { secret: SECRET, signing_secret: SECRET, previous_secret: SECRET },
    'a password': { password: SECRET },
    'an authorization one level down': { upstream: { authorization: SECRET } },
    'an api key one level down': { key: { api_key: SECRET }, client: { apiKey: SECRET } },
    'a secret one level down': { endpoint: { secret: SECRET, previous_secret: SECRET } },
    'a password one level down': { database: { password: SECRET } },
  };
  for (const [carrier, object] of Object.entries(carriers)) {
    it(`in ${carrier}`, () => {
      const line = logged(object);
      expect(line).not.toContain(SECRET);
      expect(line).toContain('[redacted]');
    });
  }

  it('and keeps everything else as it was', () => {
    const line = JSON.parse(logged({ customer_id: 42, endpoint: { url: 'https://example.test/hook' } }));
    expect(line).toMatchObject({
      customer_id: 42,
      endpoint: { url: 'https://example.test/hook' },
      service: 'test',
    });
  });
});
