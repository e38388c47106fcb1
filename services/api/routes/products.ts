import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { getProduct, listProducts } from '../../../libs/catalog/index.js';
import {
  booleanQuery,
  integerPathId,
  listOf,
  Product,
  paginationOf,
  paginationQuery,
  single,
} from '../../../libs/schemas/index.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../plugins/openapi.js';
import { orgIdOf } from '../types.js';

const ProductListQuery = paginationQuery.extend({
  active: booleanQuery
    .optional()
    .meta({ description: '`true` or `false`: only active, or only inactive, products.' }),
});
const ProductPath = z.object({ product_id: integerPathId });

/** The catalog is read-only in the public API; products are managed from the console. */
export const productRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db } = app.deps.platform;

  app.get(
    '/products',
    {
      schema: {
        operationId: 'listProducts',
        tags: ['Products'],
        summary: 'List products, newest first',
        querystring: ProductListQuery,
        response: { 200: listOf(Product), ...errorResponses(...AUTHENTICATED_ERRORS, 422) },
      },
    },
    async (request) => {
      const { active, ...page } = request.query;
      const { data, total } = await listProducts(db, orgIdOf(request), { active }, page);
      return { data, pagination: paginationOf(page, total) };
    },
  );

  app.get(
    '/products/:product_id',
    {
      schema: {
        operationId: 'getProduct',
        tags: ['Products'],
        summary: 'Retrieve a product',
        params: ProductPath,
        response: { 200: single(Product), ...errorResponses(...AUTHENTICATED_ERRORS, 404) },
      },
    },
    async (request) => ({ data: await getProduct(db, orgIdOf(request), request.params.product_id) }),
  );
};
