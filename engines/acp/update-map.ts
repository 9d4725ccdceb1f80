// What an ACP `session/update` becomes in the session's journal (no I/O): message chunks →
// message.delta (and message.completed when the message ends), thought chunks → thought.delta, a plan
// → plan.updated, tool calls → tool.call / tool.updated, anything else → acp.update kept as it came
// (opaque, bounded). Every text and each side of a diff is bounded and cut with a marker. An update
// is read as untrusted data: a malformed one is kept opaque too, never a throw.
import { checkPlainValue, type EventData } from '../../protocol/index.js';
import type { EngineEventType } from '../../runtime/index.js';

/** Appends an event; false when the journal is behind (the caller may wait for it to drain). */
export type Emit = <T extends EngineEventType>(type: T, data: EventData<T>) => boolean;

/** `text` cut to `max` characters with a marker saying how much was left out. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n[… cut by Astra: ${text.length - max} more characters]`;
}

const CUT_MARKER = (max: number) => `\n[… cut by Astra: the message passed ${max} characters; the rest was not kept]`;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const optStr = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);

type ToolDetail = Pick<EventData<'tool.updated'>, 'kind' | 'title' | 'status' | 'locations' | 'content'>;
type ToolContent = NonNullable<ToolDetail['content']>[number];

/** An ACP tool call's kind, title, status, locations and content (text, diff, terminal), bounded. */
export function toolDetail(u: Obj, max: number): ToolDetail {
  const d: ToolDetail = {};
  for (const k of ['kind', 'title', 'status'] as const) {
    const v = optStr(u[k]);
    if (v !== undefined) d[k] = cutText(v, max);
  }
  if (Array.isArray(u.locations)) {
    d.locations = u.locations.filter(isObj).flatMap((l) => {
      const p = optStr(l.path);
      if (p === undefined) return [];
      const loc: { path: string; line?: number | null } = { path: p };
      if (Number.isSafeInteger(l.line) || l.line === null) loc.line = l.line as number | null;
      return [loc];
    });
  }
  if (Array.isArray(u.content)) d.content = u.content.filter(isObj).map((c) => toolContent(c, max));
  return d;
}

function toolContent(c: Obj, max: number): ToolContent {
  if (c.type === 'diff') {
    const out: ToolContent = { type: 'diff', path: optStr(c.path) ?? '', newText: cutText(optStr(c.newText) ?? '', max) };
    out.oldText = typeof c.oldText === 'string' ? cutText(c.oldText, max) : null;
    return out;
  }
  if (c.type === 'terminal') return { type: 'terminal', terminalId: optStr(c.terminalId) ?? '' };
  if (c.type === 'content' && isObj(c.content)) {
    const inner = c.content;
    if (inner.type === 'text') return { type: 'text', text: cutText(optStr(inner.text) ?? '', max) };
    return { type: optStr(inner.type) ?? 'unknown', text: cutText(JSON.stringify(inner), max) };
  }
  return { type: optStr(c.type) ?? 'unknown', text: cutText(JSON.stringify(c), max) };
}

/** An update kept as it came: a plain value when it is one and small enough, else its JSON text cut. */
export function opaque(update: unknown, max: number): unknown {
  let json: string;
  try {
    json = JSON.stringify(update) ?? 'undefined';
  } catch {
    return { unreadable: true };
  }
  if (json.length <= max) {
    const plain: unknown = JSON.parse(json === 'undefined' ? 'null' : json);
    if (!checkPlainValue(plain)) return plain;
  }
  return { json: cutText(json, max) };
}

/** One turn's mapping: the message being streamed, its bound; call `end` when the prompt answers. */
export class TurnMapper {
  private message: string[] = [];
  private messageChars = 0;
  private messageCut = false;

  constructor(
    private readonly turnId: string,
    private readonly out: Emit,
    private readonly max: { text: number; opaque: number },
  ) {}

  private behind = false;
  private emit: Emit = (type, data) => {
    const ok = this.out(type, data);
    if (!ok) this.behind = true;
    return ok;
  };

  /** Maps one update; false when the journal fell behind meanwhile (wait for it before reading more). */
  update(raw: unknown): boolean {
    this.behind = false;
    this.map(raw);
    return !this.behind;
  }

  private map(raw: unknown): void {
    const u = isObj(raw) ? raw : undefined;
    const kind = u ? optStr(u.sessionUpdate) : undefined;
    const turnId = this.turnId;
    if (!u || kind === undefined) return this.keep('malformed', raw);
    if (kind === 'agent_message_chunk' && isObj(u.content) && u.content.type === 'text' && typeof u.content.text === 'string') return this.messageChunk(u.content.text);
    if (kind === 'agent_thought_chunk' && isObj(u.content) && u.content.type === 'text' && typeof u.content.text === 'string') {
      this.emit('thought.delta', { turnId, text: cutText(u.content.text, this.max.text) });
      return;
    }
    this.endMessage();
    if (kind === 'plan' && Array.isArray(u.entries)) {
      const entries = u.entries.filter(isObj).map((e) => ({ content: cutText(optStr(e.content) ?? '', this.max.text), priority: optStr(e.priority) ?? '', status: optStr(e.status) ?? '' }));
      this.emit('plan.updated', { turnId, entries });
      return;
    }
    const callId = optStr(u.toolCallId);
    if (kind === 'tool_call' && callId) {
      const args = u.rawInput === undefined ? '' : cutText(JSON.stringify(u.rawInput) ?? '', this.max.text);
      this.emit('tool.call', { turnId, callId, name: optStr(u.kind) ?? 'other', arguments: args, ...toolDetail(u, this.max.text) });
      return;
    }
    if (kind === 'tool_call_update' && callId) {
      this.emit('tool.updated', { turnId, callId, ...toolDetail(u, this.max.text) });
      return;
    }
    this.keep(kind, raw);
  }

  /** The prompt answered (or the turn ended otherwise): the message being streamed is completed with `finishReason`. */
  end(finishReason: string): void {
    this.endMessage(finishReason);
  }

  private keep(kind: string, raw: unknown): void {
    this.emit('acp.update', { turnId: this.turnId, kind, update: opaque(raw, this.max.opaque) });
  }

  private messageChunk(text: string): void {
    if (this.messageCut || text === '') return;
    const room = this.max.text - this.messageChars;
    const piece = text.length <= room ? text : text.slice(0, room) + CUT_MARKER(this.max.text);
    if (text.length > room) this.messageCut = true;
    this.message.push(piece);
    this.messageChars += piece.length;
    this.emit('message.delta', { turnId: this.turnId, text: piece });
  }

  private endMessage(finishReason?: string): void {
    if (this.message.length === 0) return;
    const data: EventData<'message.completed'> = { turnId: this.turnId, text: this.message.join('') };
    if (finishReason !== undefined) data.finishReason = finishReason;
    this.message = [];
    this.messageChars = 0;
    this.messageCut = false;
    this.emit('message.completed', data);
  }
}

/** The option an Astra decision picks among ACP's: the first `allow_*` for approve, the first `reject_*` for deny. */
export function chooseOption(options: readonly unknown[], decision: 'approve' | 'deny'): string | undefined {
  const prefix = decision === 'approve' ? 'allow_' : 'reject_';
  for (const o of options) if (isObj(o) && typeof o.kind === 'string' && o.kind.startsWith(prefix) && typeof o.optionId === 'string') return o.optionId;
  return undefined;
}

/** ACP's permission options as an approval's (each field a bounded string; one without an id left out). */
export function approvalOptions(options: unknown, max: number): { optionId: string; name: string; kind: string }[] {
  if (!Array.isArray(options)) return [];
  return options.filter(isObj).flatMap((o) => (typeof o.optionId === 'string' && o.optionId !== '' ? [{ optionId: o.optionId, name: cutText(optStr(o.name) ?? '', max), kind: optStr(o.kind) ?? '' }] : []));
}

/** The approval's text for a permission request: the tool call's title, and ACP's options by name. */
export function permissionText(params: unknown, max: number): { command: string; reason: string } {
  const p = isObj(params) ? params : {};
  const tc = isObj(p.toolCall) ? p.toolCall : {};
  const title = optStr(tc.title) ?? optStr(tc.toolCallId) ?? 'a tool call';
  const options = Array.isArray(p.options) ? p.options.filter(isObj) : [];
  const names = options.map((o) => `${optStr(o.name) ?? '?'} [${optStr(o.kind) ?? '?'}]`).join(', ');
  return { command: cutText(title, max), reason: cutText(`the agent asks permission${optStr(tc.kind) ? ` (${optStr(tc.kind)})` : ''}; its options: ${names || 'none'}`, max) };
}
