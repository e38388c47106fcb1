import { describe, expect, it } from 'vitest';
import { renderLlmsTxt } from './llms-txt.js';

const document = {
  info: { title: 'Example API', description: 'Does things.\nWell.', version: '2026-01-01' },
  servers: [{ url: 'https://api.example.com/v1' }],
  paths: {
    '/meta': { get: { summary: 'Metadata', tags: ['Metadata'], security: [] } },
    '/things': {
      get: { summary: 'List things', tags: ['Things'] },
      post: { summary: 'Create a thing', tags: ['Things'] },
    },
    '/things/{id}': { delete: { summary: 'Delete a thing', tags: ['Things'] } },
    '/untagged': { patch: {} },
  },
};

const tools = [
  {
    name: 'find_thing',
    description: 'Finds\n a thing.',
    inputSchema: { properties: { id: {}, limit: {} }, required: ['id'] },
  },
];

describe('renderLlmsTxt', () => {
  const text = renderLlmsTxt(document, tools);

  it('starts with the H1 title and a one-line summary blockquote', () => {
    expect(text.split('\n').slice(0, 3)).toEqual(['# Example API', '', '> Does things. Well.']);
  });

  it('groups operations by their first tag, in document order, linking each path', () => {
    const things = text.slice(text.indexOf('## Things'), text.indexOf('## Other'));
    expect(things.trim().split('\n')).toEqual([
      '## Things',
      '',
      '- [GET /things](https://api.example.com/v1/things): List things',
      '- [POST /things](https://api.example.com/v1/things): Create a thing',
      '- [DELETE /things/{id}](https://api.example.com/v1/things/{id}): Delete a thing',
    ]);
    expect(text).toContain('- [GET /meta](https://api.example.com/v1/meta): Metadata (no key)');
    expect(text).toContain('## Other\n\n- [PATCH /untagged](https://api.example.com/v1/untagged)\n');
    expect(text.indexOf('## Metadata')).toBeLessThan(text.indexOf('## Things'));
  });

  it('lists an operation of several tags once, under its first', () => {
    const tagged = renderLlmsTxt(
      { paths: { '/both': { get: { summary: 'Both', tags: ['First', 'Second'] } } } },
      [],
    );
    expect(tagged).toContain('## First\n\n- [GET /both](/both): Both\n');
    expect(tagged).not.toContain('## Second');
  });

  it('points Node callers at the client and its usage reporter', () => {
    const intro = text.slice(0, text.indexOf('## Docs'));
    expect(intro).toContain('`clients/node`, `@billing-service/client`');
    expect(intro).toContain('UsageReporter');
  });

  it('links the OpenAPI document, the metadata and the MCP endpoint, and lists tools with their arguments', () => {
    expect(text).toContain('(https://api.example.com/v1/openapi.json)');
    expect(text).toContain('(https://api.example.com/v1/mcp)');
    expect(text).toContain('- [find_thing](https://api.example.com/v1/mcp) ({id, limit?}): Finds a thing.');
  });

  it('lists the webhooks of the document, with how to verify them', () => {
    const withWebhooks = renderLlmsTxt(
      { ...document, webhooks: { 'thing.made': { post: { summary: 'thing.made: A thing\nwas made.' } } } },
      tools,
    );
    const section = withWebhooks.slice(
      withWebhooks.indexOf('## Webhooks'),
      withWebhooks.indexOf('## MCP tools'),
    );
    expect(section).toContain('webhook-signature');
    expect(section).toContain(
      '- [thing.made](https://api.example.com/v1/openapi.json): thing.made: A thing was made.',
    );
    expect(text).not.toContain('## Webhooks');
  });

  it('shows an example answer for a list (200) and a creation (201), from the schema a $ref names', () => {
    const json = (schema: object) => ({ content: { 'application/json': { schema } } });
    const thing = { $ref: '#/components/schemas/Thing' };
    const withExamples = renderLlmsTxt(
      {
        ...document,
        paths: {
          '/things': {
            get: {
              summary: 'List things',
              tags: ['Things'],
              responses: { '200': json({ properties: { data: { type: 'array', items: thing } } }) },
            },
            post: {
              summary: 'Create a thing',
              tags: ['Things'],
              responses: { '201': json({ properties: { data: thing } }) },
            },
          },
        },
        components: { schemas: { Thing: { examples: [{ id: 1 }] } } },
      },
      tools,
    );
    expect(withExamples).toContain(
      '- [GET /things](https://api.example.com/v1/things): List things\n  Example answer: `{"data":[{"id":1}]}`\n',
    );
    expect(withExamples).toContain(
      '- [POST /things](https://api.example.com/v1/things): Create a thing\n  Example answer: `{"data":{"id":1}}`\n',
    );
  });

  it('names a document without title or version plainly, and trims its summary to one line', () => {
    const bare = renderLlmsTxt({ info: { description: '  Does\tthings.\n' } }, []);
    expect(bare.split('\n').slice(0, 3)).toEqual(['# API', '', '> Does things.']);
    expect(bare).toContain('Base URL:  (API version unknown).');
  });

  it('marks only an operation that needs no key, and writes each summary on one line', () => {
    const secured = renderLlmsTxt(
      {
        paths: {
          '/open': { get: { summary: 'Open', tags: ['T'], security: [] } },
          '/keyed': { get: { summary: ' Needs\n  a key ', tags: ['T'], security: [{ bearer: [] }] } },
          '/default': { get: { summary: 'Default', tags: ['T'] } },
        },
      },
      [],
    );
    expect(secured).toContain(
      '## T\n\n- [GET /open](/open): Open (no key)\n- [GET /keyed](/keyed): Needs a key\n- [GET /default](/default): Default\n',
    );
  });

  it('lists a webhook without a summary by its type alone', () => {
    const bare = renderLlmsTxt({ webhooks: { 'thing.gone': {} } }, []);
    expect(bare).toContain('\n- [thing.gone](/openapi.json)\n');
  });

  it('points the MCP section at the endpoint under the base URL', () => {
    expect(text).toContain('POST https://api.example.com/v1/mcp speaks JSON-RPC 2.0');
  });

  it("takes the 200 answer's first example, even a falsy one, before a 201", () => {
    const json = (schema: object) => ({ content: { 'application/json': { schema } } });
    const answered = renderLlmsTxt(
      {
        paths: {
          '/count': {
            get: {
              tags: ['T'],
              responses: {
                '200': json({ properties: { data: { examples: [0, 5] } } }),
                '201': json({ properties: { data: { examples: [9] } } }),
              },
            },
          },
          '/pair': {
            get: {
              tags: ['T'],
              responses: { '200': json({ properties: { data: { examples: ['a', 'b'] } } }) },
            },
          },
        },
      },
      [],
    );
    expect(answered).toContain('- [GET /count](/count)\n  Example answer: `{"data":0}`\n');
    expect(answered).toContain('- [GET /pair](/pair)\n  Example answer: `{"data":"a"}`\n');
  });
});
