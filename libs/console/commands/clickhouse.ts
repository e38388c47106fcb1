import { z } from 'zod';
import { openClickHouse } from '../../clickhouse/index.js';
import { ApiError } from '../../errors/index.js';
import { migrateClickHouse } from '../../usage/index.js';
import { defineCommand } from '../command.js';

export const clickhouseCommands = [
  defineCommand({
    name: 'clickhouse migrate',
    summary: 'Create the ClickHouse database and usage table when missing (needs CLICKHOUSE_URL)',
    usage: '',
    flags: z.strictObject({}),
    needsSchema: false,
    async run({ config }) {
      if (!config.CLICKHOUSE_URL) {
        throw ApiError.badRequest(
          'CLICKHOUSE_URL is not set: without it, usage is aggregated from Postgres.',
        );
      }
      const clickhouse = openClickHouse({ url: config.CLICKHOUSE_URL, database: config.CLICKHOUSE_DATABASE });
      try {
        return await migrateClickHouse(clickhouse);
      } finally {
        await clickhouse.close();
      }
    },
  }),
];
