// The meta file: a small per-session summary kept beside the journal so start-up reads no journal.
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ApprovalPolicy, OnControllerLost, Session, SessionState } from '../protocol/index.js';
import { writeFileAtomic } from '../durable/index.js';

/** The wire view of a session from its meta (the daemon overlays `controller`). */
export function sessionFromMeta(m: SessionMeta, state: SessionState, headSeq: number, runningTurnId?: string): Session {
  const s: Session = {
    id: m.id,
    title: m.title,
    cwd: m.cwd,
    engine: m.engine,
    approvalPolicy: m.approvalPolicy,
    state,
    createdAt: m.createdAt,
    updatedAt: m.updatedAt,
    headSeq,
    epoch: m.epoch,
  };
  if (m.onControllerLost) s.onControllerLost = m.onControllerLost;
  const shown = m.engineOptions ? viewOfEngineOptions(m.engineOptions) : undefined;
  if (shown) s.engineOptions = shown;
  if (m.approvalTimeoutMs !== undefined) s.approvalTimeoutMs = m.approvalTimeoutMs;
  if (runningTurnId !== undefined) s.runningTurnId = runningTurnId;
  return s;
}

/** A string option longer than this is left out of the Session view (a chat systemPrompt may be 64 KiB; session/list returns up to 1,000 sessions). */
export const VIEW_OPTION_MAX_CHARS = 256;

/** The engine's options as a Session shows them: long strings left out; undefined when nothing is left. */
function viewOfEngineOptions(options: object): Record<string, unknown> | undefined {
  const shown: Record<string, unknown> = {};
  let any = false;
  for (const [k, v] of Object.entries(options)) {
    if (v === undefined || (typeof v === 'string' && v.length > VIEW_OPTION_MAX_CHARS)) continue;
    shown[k] = v;
    any = true;
  }
  return any ? shown : undefined;
}

export const META_FORMAT_VERSION = 1;
export const JOURNAL_FILE = 'journal.astra';
export const META_FILE = 'meta.json';

/** Small per-session summary kept beside the journal so start-up does not read journals. */
export interface SessionMeta {
  format: number;
  id: string;
  title: string;
  cwd: string;
  engine: string;
  approvalPolicy: ApprovalPolicy;
  onControllerLost?: OnControllerLost;
  /** What the engine's parseOptions made of session/create's engineOptions (a settings record in the journal). */
  engineOptions?: object;
  /** An approval nobody answers within this long resolves as denied (approval_expired); absent: no expiry. */
  approvalTimeoutMs?: number;
  archived: boolean;
  createdAt: number;
  updatedAt: number;
  headSeq: number;
  epoch: number;
  /** Journal size when this meta was written; a mismatch at start-up means "load the journal". */
  journalBytes: number;
  createKey?: string;
  createFingerprint?: string;
}

export function readMeta(file: string): SessionMeta | undefined {
  try {
    const m = JSON.parse(fs.readFileSync(file, 'utf8')) as SessionMeta;
    if (typeof m !== 'object' || m === null || typeof m.id !== 'string' || typeof m.journalBytes !== 'number') return undefined;
    if (m.format > META_FORMAT_VERSION) return undefined;
    return m;
  } catch {
    return undefined;
  }
}

export function writeMeta(dir: string, meta: SessionMeta, durable: boolean): void {
  writeFileAtomic(path.join(dir, META_FILE), JSON.stringify(meta), { durable });
}

/** The meta of a session nothing is known of yet (its journal fills it in on replay; the engine stays '' — none — without a session.created). */
export function blankMeta(id: string): SessionMeta {
  return { format: META_FORMAT_VERSION, id, title: '', cwd: '', engine: '', approvalPolicy: 'ask', archived: false, createdAt: 0, updatedAt: 0, headSeq: 0, epoch: 0, journalBytes: 0 };
}
