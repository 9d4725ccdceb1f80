// runtime/: sessions, turns, approvals, idempotency and the crash-safe per-session journal; the
// contract an engine implements (engine.ts). The engines themselves are engines/.
export { Runtime, type RuntimeOptions, type CreateSessionParams, type RuntimeEvents, type SubscriptionSink, type SubscriptionHandle } from './runtime.js';
export type { RuntimeLogger } from './logger.js';
export type { ApprovalSettled } from './approvals.js';
export { silentLogger } from './logger.js';
export type { Engine, EngineAvailability, EngineContext, EngineResult, EngineEvent, EngineEventType, RecordedEvent, CommandTerminal, ApprovalRequest } from './engine.js';
export { ENGINE_EVENT_TYPES, RUNTIME_EVENT_TYPES } from './engine.js';
export {
  SessionJournal,
  JOURNAL_MAGIC,
  JOURNAL_FORMAT_VERSION,
  JOURNAL_HEADER_BYTES,
  RecordKind,
  encodeRecord,
} from '../journal/journal.js';
export { StoredEvent } from './event-body.js';
export { JOURNAL_FILE, META_FILE } from './session-meta.js';
export type { FeedNotice, FeedPhase, ScreenCapture, SubscribeOptions as FeedSubscribeOptions } from './feed/subscription-feed.js';
export { crc32 } from '../journal/crc32.js';
