import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { generateApiKey } from './keys.js';

export interface CreatedApiKey {
  id: number;
  org_id: number;
  name: string;
  /** The only time the full key exists outside its holder's hands. */
  api_key: string;
  prefix: string;
}

export async function createApiKey(
  db: Queryable,
  input: { orgId: number; name?: string; environment?: 'live' | 'test' },
): Promise<CreatedApiKey> {
  const environment = input.environment ?? 'live';
  const { key, hash, prefix } = generateApiKey(environment);
  const { rows } = await db.query<{ id: number }>(
    `INSERT INTO api_keys (org_id, name, environment, key_hash, prefix)
     SELECT id, $2, $3, $4, $5 FROM organizations WHERE id = $1
     RETURNING id`,
    [input.orgId, input.name ?? '', environment, hash, prefix],
  );
  const row = rows[0];
  if (!row) throw ApiError.notFound(`Organization ${input.orgId}`);
  return { id: row.id, org_id: input.orgId, name: input.name ?? '', api_key: key, prefix };
}

export async function revokeApiKey(
  db: Queryable,
  keyId: number,
): Promise<{ id: number; org_id: number; prefix: string; revoked_at: string }> {
  const { rows } = await db.query<{ id: number; org_id: number; prefix: string; revoked_at: Date }>(
    `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, now()) WHERE id = $1
     RETURNING id, org_id, prefix, revoked_at`,
    [keyId],
  );
  const row = rows[0];
  if (!row) throw ApiError.notFound(`API key ${keyId}`);
  return { ...row, revoked_at: row.revoked_at.toISOString() };
}
