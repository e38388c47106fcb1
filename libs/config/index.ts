export {
  ConfigError,
  loadConfig,
  loadConfigOrExit,
  reaching,
  startOrExit,
  stopOnSignals,
  withTimeout,
} from './load.js';
export {
  type ApiConfig,
  apiSettings,
  type CommonConfig,
  type ConsoleConfig,
  consoleSettings,
  type DispatcherConfig,
  dispatcherSettings,
  type EmbeddedConfig,
  embeddedSettings,
  type IngestConfig,
  ingestSettings,
  type SinkConfig,
  sinkSettings,
} from './settings.js';
