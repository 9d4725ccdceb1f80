// One gateway-wide cache of session events' SSE frames: every tab streaming a session gets each
// event from its own daemon connection, but the frame (JSON, base64 of command output) is encoded
// once and shared. Bounded in bytes; an entry goes once every open stream of its session has sent
// it (or, past the bound, oldest first). This module owns the cache; EventStream registers with it.
import type { SessionEvent } from '../../protocol/index.js';

/** Frames kept in all, in UTF-16 code units (≈ bytes: frames are ASCII but for the event's own text). */
export const DEFAULT_FRAME_CACHE_CHARS = 8 * 1024 * 1024;

/** An event as JSON: bytes (command output) become base64, with the encoding named beside them. */
export function eventToJson(event: SessionEvent): Record<string, unknown> {
  const data = event.data as Record<string, unknown>;
  let jsonData: Record<string, unknown> = data;
  if (data && data.data instanceof Uint8Array) {
    const bytes = data.data;
    jsonData = { ...data, data: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'), encoding: 'base64' };
  }
  return { sessionId: event.sessionId, seq: event.seq, ts: event.ts, type: event.type, data: jsonData };
}

export function eventFrame(e: SessionEvent): string {
  return `id: ${e.seq}\nevent: ${e.type}\ndata: ${JSON.stringify(eventToJson(e))}\n\n`;
}

/** What the cache needs of a stream: where it is. */
export interface FrameReader {
  readonly lastSentSeq: number;
}

interface SessionFrames {
  frames: Map<number, string>;
  readers: Set<FrameReader>;
}

export class FrameCache {
  private readonly sessions = new Map<string, SessionFrames>();
  private chars = 0;

  constructor(private readonly maxChars: number = DEFAULT_FRAME_CACHE_CHARS) {}

  register(sessionId: string, reader: FrameReader): void {
    let s = this.sessions.get(sessionId);
    if (!s) this.sessions.set(sessionId, (s = { frames: new Map(), readers: new Set() }));
    s.readers.add(reader);
  }

  unregister(sessionId: string, reader: FrameReader): void {
    const s = this.sessions.get(sessionId);
    if (!s) return;
    s.readers.delete(reader);
    if (s.readers.size === 0) {
      for (const f of s.frames.values()) this.chars -= f.length;
      this.sessions.delete(sessionId);
    }
  }

  /** The event's frame, encoded by the first stream that needs it. */
  frame(e: SessionEvent): string {
    const s = this.sessions.get(e.sessionId);
    // One reader: nobody to share with, and nothing to evict later.
    if (!s || s.readers.size < 2) return eventFrame(e);
    let f = s.frames.get(e.seq);
    if (f === undefined) {
      f = eventFrame(e);
      s.frames.set(e.seq, f);
      this.chars += f.length;
      if (this.chars > this.maxChars) this.trim();
    }
    return f;
  }

  /** Drops the frames every reader of the session has sent; called once per written chunk. */
  passed(sessionId: string): void {
    const s = this.sessions.get(sessionId);
    if (!s || s.frames.size === 0) return;
    let low = Infinity;
    for (const r of s.readers) low = Math.min(low, r.lastSentSeq);
    for (const [seq, f] of s.frames) {
      if (seq > low) break;
      s.frames.delete(seq);
      this.chars -= f.length;
    }
  }

  /** Past the bound: oldest first, across sessions (a stream that lags re-encodes what it missed). */
  private trim(): void {
    for (const s of this.sessions.values()) {
      for (const [seq, f] of s.frames) {
        if (this.chars <= this.maxChars / 2) return;
        s.frames.delete(seq);
        this.chars -= f.length;
      }
    }
  }

  /** For tests and the bench: frames held now. */
  get size(): { frames: number; chars: number } {
    let frames = 0;
    for (const s of this.sessions.values()) frames += s.frames.size;
    return { frames, chars: this.chars };
  }
}
