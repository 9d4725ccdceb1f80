// daemon/: embed the Astra host in your own process, with your own engines.
export { createDaemon, Daemon, type DaemonOptions, type ShutdownReason, type StopReason } from './daemon.js';
export { createLogger, droppedLogLines, silentLogger, type Logger } from './logger.js';
export type { Engine, EngineAvailability, EngineContext, EngineEvent, EngineEventType, EngineResult, RecordedEvent } from '../runtime/index.js';
export { ENGINE_EVENT_TYPES, RUNTIME_EVENT_TYPES } from '../runtime/index.js';
export { createShellEngine } from '../engines/index.js';
