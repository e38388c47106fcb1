import { readFile } from 'node:fs/promises';
import path from 'node:path';
import openapiTS, { astToString, COMMENT_HEADER } from 'openapi-typescript';
import { describe, expect, it } from 'vitest';

const PACKAGE = path.resolve(import.meta.dirname, '..');

/**
 * The client's types are generated from the repository's openapi.json (`npm run openapi` at the
 * root rewrites both): a route or schema changed without regenerating them fails here.
 */
describe('src/generated/openapi.ts', () => {
  it('is what openapi-typescript makes of openapi.json now (run `npm run openapi` at the root)', async () => {
    const { scripts } = JSON.parse(await readFile(path.join(PACKAGE, 'package.json'), 'utf8'));
    // the options the generate script passes, so that this test and the script cannot drift apart
    expect(scripts.generate).toBe(
      'openapi-typescript ../../openapi.json --default-non-nullable false --output src/generated/openapi.ts',
    );
    const document = JSON.parse(await readFile(path.join(PACKAGE, '../../openapi.json'), 'utf8'));
    const expected =
      COMMENT_HEADER + astToString(await openapiTS(document, { defaultNonNullable: false, silent: true }));
    const committed = await readFile(path.join(PACKAGE, 'src/generated/openapi.ts'), 'utf8');
    expect(committed === expected, 'src/generated/openapi.ts is stale: run `npm run openapi`').toBe(true);
  }, 30_000);
});
