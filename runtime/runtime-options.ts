// What an embedder passes to Runtime.open, and what it may listen to.
import type { ApprovalPolicy, FinalTurnStatus, OnControllerLost, SessionEvent } from '../protocol/index.js';
import type { ApprovalRequest, Engine } from './engine.js';
import type { EncodedBody, EventBody } from './event-body.js';
import type { RuntimeLogger } from './logger.js';
import type { ApprovalSettled } from './approvals.js';

export interface RuntimeOptions {
  /** Sessions live in <dataDir>/sessions/<id>/. */
  dataDir: string;
  /**
   * The engines sessions may name, registered by whoever composes the runtime (the daemon registers
   * engines/'s shell, chat and synthetic). None are built in: without any, sessions can be read but
   * not created.
   */
  engines?: Record<string, Engine>;
  /** The engine of a session/create that names none. Default: the first of `engines`. */
  defaultEngine?: string;
  /** Default LIMITS.maxInputChars. */
  maxInputChars?: number;
  /** Approvals of a session created without approvalTimeoutMs expire after this long; 0 or absent = never (the daemon passes its default, 1 h). */
  approvalTimeoutMs?: number;
  /** Bounded delay before streamed output is fsynced (writes happen once per tick regardless). Default 5 ms. */
  groupCommitMs?: number;
  /** Bytes of recent events each loaded session keeps in memory. Default 8 MiB. */
  cacheBytesPerSession?: number;
  /**
   * While a subscriber of a session is behind (paused or replaying), the session keeps the events it
   * still needs in memory beyond cacheBytesPerSession, so it catches up from memory rather than by
   * reading the journal back; the surplus goes as soon as nobody needs it. This bounds the surplus
   * of all sessions together. Default 64 MiB.
   */
  catchUpCacheBytes?: number;
  /**
   * Write large journal records (output events over 1 MiB) with direct I/O (O_DIRECT, Linux), past
   * the page cache and off the event loop, where the file system takes it. Default true; turn it off
   * for a disk much slower than memory, where the page cache absorbs bursts of output better.
   */
  journalDirectIO?: boolean;
  /**
   * Keep a headless terminal emulator per command running in a pseudo-terminal, for subscriptions
   * made with `screen: true`. true (default): parsed on a worker thread where the built package has
   * its script, else on the event loop; 'inline': on the event loop; false: none (subscribers get the
   * output as events).
   */
  commandScreens?: boolean | 'inline';
  logger?: RuntimeLogger;
  now?: () => number;
  /**
   * How event bodies ({seq, ts, type, data}) are encoded for the journal. The daemon passes the
   * wire's packer (ipc/), so stored bytes go out on the wire as they are. It is handed the whole
   * event and must encode exactly those four keys, as a map in that order. The result may be a view
   * that is valid until the next call. Default: plain MessagePack.
   */
  packEventBody?: (body: EventBody) => EncodedBody;
}

export interface CreateSessionParams {
  title?: string;
  cwd?: string;
  engine?: string;
  approvalPolicy?: ApprovalPolicy;
  onControllerLost?: OnControllerLost;
  /** Checked by the engine's parseOptions; refused for an engine that has none. */
  engineOptions?: Record<string, unknown>;
  /** Approvals of the session expire (deny, approval_expired) after this long; absent: the runtime's approvalTimeoutMs. */
  approvalTimeoutMs?: number;
  idempotencyKey?: string;
}

export interface RuntimeEvents {
  approvalRequested: (a: ApprovalRequest) => void;
  /** A pending approval was answered, expired or withdrawn with its turn. */
  approvalSettled: (a: ApprovalSettled) => void;
  turnEnded: (sessionId: string, turnId: string, status: FinalTurnStatus) => void;
  /** Every event as it is published (after its journal write), for embedders; the daemon does not listen. */
  event: (e: SessionEvent) => void;
}
