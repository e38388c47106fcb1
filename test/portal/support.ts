import type { LightMyRequestResponse } from 'fastify';
import type { TestApi } from '../helpers/api.js';

/** The path and query of an absolute link (pages are fetched through inject). */
export function pathOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
}

export async function createSession(
  api: TestApi,
  key: string,
  body: Record<string, unknown>,
): Promise<{ id: string; url: string; locale: string; expires_at: string; customer_id: number }> {
  const response = await api.request({ method: 'POST', path: '/portal-sessions', key, payload: body });
  if (response.statusCode !== 201) throw new Error(`portal session: ${response.statusCode} ${response.body}`);
  return response.json().data;
}

export function open(
  api: TestApi,
  url: string,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return api.app.inject({ method: 'GET', url: pathOf(url), headers });
}

/** Every href and src of a page (the links a person or the browser would follow). */
export function linksOf(html: string): string[] {
  return [...html.matchAll(/\b(?:href|src)="([^"]+)"/g)].map((match) => match[1]!.replace(/&amp;/g, '&'));
}
