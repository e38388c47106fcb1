import type { Command } from '../command.js';
import { keyCommands } from './key.js';
import { migrateCommand } from './migrate.js';
import { orgCommands } from './org.js';
import { seedCommand } from './seed.js';

/** Every console command; each module owns one area. */
export const COMMANDS: Command[] = [migrateCommand, ...orgCommands, ...keyCommands, seedCommand] as Command[];
