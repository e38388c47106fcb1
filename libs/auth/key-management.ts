import type { Queryable } from '../db/index.js';
import { ApiError } from '../errors/index.js';
import { readPage } from '../list-pages/index.js';
import type { PaginationQuery } from '../schemas/index.js';
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

/** An API key as operators see it: never the key nor its hash, which identify the holder. */
export interface ApiKeySummary {
  id: number;
  org_id: number;
  name: string;
  environment: 'live' | 'test';
  prefix: string;
  created_at: string;
  revoked_at: string | null;
}

type ApiKeyRow = Omit<ApiKeySummary, 'created_at' | 'revoked_at'> & {
  created_at: Date;
  revoked_at: Date | null;
};

/** An organization's keys, revoked ones included, newest first (see libs/list-pages). */
export async function listApiKeys(
  db: Queryable,
  orgId: number,
  page: PaginationQuery,
): Promise<{ data: ApiKeySummary[]; total: number }> {
  const { rows, total } = await readPage<ApiKeyRow>(
    db,
    {
      table: 'api_keys',
      alias: 'k',
      columns: 'k.id, k.org_id, k.name, k.environment, k.prefix, k.created_at, k.revoked_at',
      where: 'org_id = $1',
      values: [orgId],
    },
    page,
  );
  return {
    data: rows.map((row) => ({
      ...row,
      created_at: row.created_at.toISOString(),
      revoked_at: row.revoked_at?.toISOString() ?? null,
    })),
    total: await total,
  };
}
