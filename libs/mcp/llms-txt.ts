/**
 * llms.txt (https://llmstxt.org): an H1, a summary blockquote, a few paragraphs, then H2 sections
 * of links. Rendered from the live OpenAPI document and the MCP tool list, never written by hand,
 * so it describes exactly the operations and tools the service has.
 */

interface OpenApiOperation {
  summary?: string;
  description?: string;
  tags?: string[];
  security?: unknown[];
  responses?: Record<string, { content?: Record<string, { schema?: SchemaNode }> }>;
}

interface SchemaNode {
  $ref?: string;
  type?: string;
  items?: SchemaNode;
  properties?: Record<string, SchemaNode>;
  examples?: unknown[];
}

/** The parts of an OpenAPI 3.1 document this page reads. */
export interface OpenApiSource {
  info?: { title?: string; description?: string; version?: string };
  servers?: { url: string }[];
  paths?: Record<string, unknown>;
  components?: { schemas?: Record<string, SchemaNode> };
  /** The deliveries the service POSTs to registered endpoints, by event type. */
  webhooks?: Record<string, unknown>;
}

export interface ToolSummary {
  name: string;
  description: string;
  inputSchema: { properties?: Record<string, unknown>; required?: string[] };
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

export function renderLlmsTxt(openApi: OpenApiSource, tools: readonly ToolSummary[]): string {
  const apiBase = openApi.servers?.[0]?.url ?? '';
  const title = openApi.info?.title ?? 'API';
  const lines: string[] = [
    `# ${title}`,
    '',
    `> ${oneLine(openApi.info?.description ?? '')}`,
    '',
    `Base URL: ${apiBase} (API version ${openApi.info?.version ?? 'unknown'}). Send ` +
      '`Authorization: Bearer <API_KEY>` on every request unless an operation below says "no key". ' +
      'Bodies are JSON; money and other decimals are strings (money has 8 fractional digits). ' +
      'Lists take `limit` (1-100, default 25) and `offset`, are sorted newest first and answer ' +
      '`{ data, pagination: { limit, offset, total, has_more } }`. Errors answer ' +
      '`{ error_code, detail, request_id, details? }`; limits are per organization per UTC hour ' +
      '(429 with Retry-After).',
    '',
    "From Node, the client in the service's repository (`clients/node`, `@billing-service/client`) " +
      'types every operation below from this OpenAPI document (`createBillingClient`, errors thrown as ' +
      'one `BillingApiError`), and its `UsageReporter` sends usage in batches (POST /usage/events/batch, ' +
      'up to 1000 events) with each idempotency key fixed when the event is reported, retrying network ' +
      'errors, 429 and 503 as Retry-After says without counting an event twice.',
    '',
    '## Docs',
    '',
    `- [OpenAPI document](${apiBase}/openapi.json): every operation with its request and response schemas (needs the key)`,
    `- [API metadata](${apiBase}/meta): version, base path, rate limits by plan (no key)`,
    `- [MCP endpoint](${apiBase}/mcp): read-only Model Context Protocol server for AI assistants (same key; tools below)`,
    '',
  ];

  for (const [tag, operations] of operationsByTag(openApi.paths ?? {})) {
    lines.push(`## ${tag}`, '');
    for (const { method, path, operation } of operations) {
      const noKey = Array.isArray(operation.security) && operation.security.length === 0 ? ' (no key)' : '';
      const summary = operation.summary ? `: ${oneLine(operation.summary)}` : '';
      lines.push(`- [${method.toUpperCase()} ${path}](${apiBase}${path})${summary}${noKey}`);
      const example = answerExample(openApi, operation);
      if (example) lines.push(`  Example answer: \`${example}\``);
    }
    lines.push('');
  }

  const webhooks = Object.entries(openApi.webhooks ?? {});
  if (webhooks.length) {
    lines.push(
      '## Webhooks',
      '',
      'Register an endpoint (POST /webhook-endpoints) and keep its `secret`. Each delivery is a POST of ' +
        'the event as JSON, at least once (deduplicate on `id`), signed twice: `X-Service-Signature: ' +
        'sha256=<hex HMAC-SHA256 of the raw body keyed with the whole secret>`, and the Standard Webhooks ' +
        'headers `webhook-id`, `webhook-timestamp`, `webhook-signature` that the `standardwebhooks` ' +
        'libraries verify with the secret as shown. Payload schemas: `webhooks` in the OpenAPI document.',
      '',
    );
    for (const [type, item] of webhooks) {
      const summary = (item as { post?: OpenApiOperation }).post?.summary;
      lines.push(`- [${type}](${apiBase}/openapi.json)${summary ? `: ${oneLine(summary)}` : ''}`);
    }
    lines.push('');
  }

  lines.push(
    '## MCP tools',
    '',
    `POST ${apiBase}/mcp speaks JSON-RPC 2.0 (initialize, tools/list, tools/call, ping) with JSON ` +
      "responses and no session; every tool is read-only and sees only the key's organization.",
    '',
  );
  for (const tool of tools) {
    lines.push(`- [${tool.name}](${apiBase}/mcp) (${toolArguments(tool)}): ${oneLine(tool.description)}`);
  }
  lines.push('');
  return lines.join('\n');
}

function operationsByTag(paths: Record<string, unknown>) {
  const groups = new Map<string, { method: string; path: string; operation: OpenApiOperation }[]>();
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const operation = (item as Record<string, OpenApiOperation | undefined>)[method];
      if (!operation) continue;
      const tag = operation.tags?.[0] ?? 'Other';
      const group = groups.get(tag) ?? [];
      group.push({ method, path, operation });
      groups.set(tag, group);
    }
  }
  return groups;
}

/**
 * `{ "data": <example> }` when the success answer's `data` is a schema with an example of its own
 * (or a list of one): what an agent would otherwise have to assemble from the OpenAPI document.
 */
function answerExample(openApi: OpenApiSource, operation: OpenApiOperation): string | undefined {
  const success = operation.responses?.['200'] ?? operation.responses?.['201'];
  const data = success?.content?.['application/json']?.schema?.properties?.data;
  if (!data) return undefined;
  const resolve = (node: SchemaNode | undefined) =>
    node?.$ref ? openApi.components?.schemas?.[node.$ref.replace('#/components/schemas/', '')] : node;
  const list = data.type === 'array';
  const example = resolve(list ? data.items : data)?.examples?.[0];
  if (example === undefined) return undefined;
  return JSON.stringify({ data: list ? [example] : example });
}

/** `{customer_id}` or `{status?, limit?}`: the argument names, optional ones marked. */
function toolArguments(tool: ToolSummary): string {
  const required = new Set(tool.inputSchema.required ?? []);
  const names = Object.keys(tool.inputSchema.properties ?? {}).map((name) =>
    required.has(name) ? name : `${name}?`,
  );
  return `{${names.join(', ')}}`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
