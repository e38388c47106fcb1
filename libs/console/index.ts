export { type Command, type ConsoleContext, defineCommand } from './command.js';
export { booleanFlag, booleanValue, idFlag, integerFlag, jsonFlag, textFlag } from './flags.js';
export { type ConsoleIo, runConsole } from './run.js';
