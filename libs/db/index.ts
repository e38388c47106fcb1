export { afterCommit, Database, type Queryable, type TransactionOptions } from './database.js';
export { type EmbeddedPostgres, startEmbeddedPostgres } from './embedded.js';
export { MIGRATIONS_DIR, migrate } from './migrate.js';
export { type OpenedDatabase, openDatabase } from './open.js';
export { isConnectionFailure, isUniqueViolation } from './pg-errors.js';
