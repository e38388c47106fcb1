import { z } from 'zod';
import { openClickHouse } from '../../clickhouse/index.js';
import { ConfigError, reaching } from '../../config/index.js';
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
        throw new ConfigError([
          'CLICKHOUSE_URL: not set; without it usage is aggregated from Postgres, and there is no ClickHouse table to create',
        ]);
      }
      const clickhouse = openClickHouse({ url: config.CLICKHOUSE_URL, database: config.CLICKHOUSE_DATABASE });
      try {
        return await reaching('CLICKHOUSE_URL', migrateClickHouse(clickhouse));
      } finally {
        await clickhouse.close();
      }
    },
  }),
];
