// What connecting to the daemon takes (connect.ts's connectOrSpawn and handshake) and what it tells
// its caller on the way.
import type { Connection } from '../ipc/index.js';

export interface ConnectOptions {
  clientName: string;
  clientVersion?: string;
  /** Start a daemon when none answers (default true). */
  autoStart?: boolean;
  /** Relocates everything, like ASTRA_HOME. */
  home?: string;
  env?: NodeJS.ProcessEnv;
  /** How long to wait for a spawned daemon to answer (default 15 s). */
  startTimeoutMs?: number;
  /** Per-request timeout on the connection (default 30 s). */
  requestTimeoutMs?: number;
  /** Only accept this daemon instance. */
  instanceId?: string;
  optOutNotificationMethods?: string[];
  /** Ask for `session/events` (several events per frame when behind); the caller must handle it. */
  batchEvents?: boolean;
  /** Take the experimental surface (capabilities.experimentalApi): experimental methods and event fields. Default false. */
  experimentalApi?: boolean;
  /**
   * When the running daemon speaks another protocol version and says it is idle (no other client,
   * no running turn), stop it (SIGTERM) and start one of this version instead of failing with
   * incompatible_protocol. A busy daemon is never touched. Default false.
   */
  replaceIdleIncompatibleDaemon?: boolean;
  /** Extra arguments for a daemon this call starts (e.g. --idle-timeout). */
  daemonArgs?: string[];
  /**
   * For `astra daemon start|restart`: a daemon this call starts gets the environment's engine
   * settings (ASTRA_CHAT_*, OPENAI_API_KEY) and does not wait for a restart under way. Any other
   * client starts one with the rest of its environment only (docs/operations.md). Default false.
   */
  explicitStart?: boolean;
  /**
   * 'envelope': once the handshake authenticated the daemon and it speaks this protocol version,
   * its frames are checked for their envelope only (Connection.trustShapes). 'full' (the default
   * here; AstraClient defaults to 'envelope'): every frame is checked through and through.
   */
  validate?: ValidateMode;
  /** Called before the connection starts reading, so no early notification is missed. */
  onConnection?: (conn: Connection) => void;
  /**
   * A running daemon has not finished the handshake after connect.ts WAITING_NOTICE_MS (hung, stopped, or very
   * busy): called once per attempt, so a CLI can say it is waiting. The attempt still fails after
   * HANDSHAKE_TIMEOUT_MS (connect.ts), naming the pid and the fix.
   */
  onWaiting?: (info: WaitingInfo) => void;
  /**
   * No daemon answers and `astra daemon restart` (pid) is starting one: this call waits for it and
   * starts none (discovery/restart-marker.ts). Called once per restart, so a CLI can say why it waits.
   */
  onRestartWait?: (info: RestartWaitInfo) => void;
}

export interface RestartWaitInfo {
  /** The pid of the `astra daemon restart` process. */
  pid: number;
  /** Epoch ms after which its marker no longer holds clients back. */
  until: number;
}

/** How much of each frame from the daemon the client checks (AstraClientOptions.validate). */
export type ValidateMode = 'envelope' | 'full';

export interface WaitingInfo {
  /** The pid the discovery record names. */
  pid: number;
  waitedMs: number;
}
