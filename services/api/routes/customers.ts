import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { CustomerReader, createCustomer, listCustomers } from '../../../libs/customers/index.js';
import {
  CreateCustomer,
  Customer,
  integerPathId,
  listOf,
  paginationOf,
  paginationQuery,
  single,
} from '../../../libs/schemas/index.js';
import { AUTHENTICATED_ERRORS, errorResponses } from '../plugins/openapi.js';
import { orgIdOf } from '../types.js';

const CustomerPath = z.object({ customer_id: integerPathId });

export const customerRoutes: FastifyPluginAsyncZod = async (app) => {
  const { db } = app.deps.platform;
  const customers = new CustomerReader(db);

  app.get(
    '/customers',
    {
      schema: {
        operationId: 'listCustomers',
        tags: ['Customers'],
        summary: 'List customers, newest first',
        querystring: paginationQuery,
        response: { 200: listOf(Customer), ...errorResponses(...AUTHENTICATED_ERRORS, 422) },
      },
    },
    async (request) => {
      const { data, total } = await listCustomers(db, orgIdOf(request), request.query);
      return { data, pagination: paginationOf(request.query, total) };
    },
  );

  app.post(
    '/customers',
    {
      schema: {
        operationId: 'createCustomer',
        tags: ['Customers'],
        summary: 'Create a customer',
        description:
          '`country` defaults to `CA` and `tax_exempt` to false. `notes` is stored but never returned. ' +
          'Unknown fields are rejected with 422, each failing field named in `details`.',
        body: CreateCustomer,
        response: {
          201: single(Customer),
          ...errorResponses(...AUTHENTICATED_ERRORS, 400, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const customer = await createCustomer(db, orgIdOf(request), request.body);
      return reply.code(201).send({ data: customer });
    },
  );

  app.get(
    '/customers/:customer_id',
    {
      schema: {
        operationId: 'getCustomer',
        tags: ['Customers'],
        summary: 'Retrieve a customer',
        params: CustomerPath,
        response: { 200: single(Customer), ...errorResponses(...AUTHENTICATED_ERRORS, 404) },
      },
    },
    async (request) => ({ data: await customers.get(orgIdOf(request), request.params.customer_id) }),
  );
};
