// The transcript is the journal: the conversation sent to the model is rebuilt from the session's
// events (message.user, message.completed, tool.call, tool.result), so the second turn sees the
// first and a restart, an unload or a takeover loses nothing. The runtime keeps the events of
// TRANSCRIPT_EVENT_TYPES (the engine's declared history) as they are appended, and reads the journal
// only when the session loads. A tool call the journal has no result for (the daemon died while it
// ran) is answered 'interrupted' by the runtime on recovery (the engine's Engine.interrupted), and
// gets the same text here if it still has none, so the request stays valid (every assistant
// tool_call must be answered) and the model knows the command did not finish.
import type { RecordedEvent } from '../../runtime/engine.js';
import type { ChatEventData, ChatMessage, ToolCall } from './messages.js';

/** An event as the runtime hands it back (ctx.history()); `data` is checked here. */
export type { RecordedEvent };

/**
 * The only event types the transcript reads: the chat engine's Engine.history, so the runtime keeps
 * only these (never command.output, which can be gigabytes and reaches the model only as
 * tool.result's head and tail) folded as they are appended and replayed.
 */
export const TRANSCRIPT_EVENT_TYPES = ['message.user', 'message.completed', 'tool.call', 'tool.result', 'turn.completed'] as const;

export const DEFAULT_SYSTEM_PROMPT =
  'You are a helpful assistant working in a terminal session. You can run shell commands with the ' +
  '`shell` tool; the user approves each one before it runs and may deny it. Prefer short, safe ' +
  'commands, say what you are about to do, and answer plainly when no command is needed.';

export const INTERRUPTED_RESULT_OUTPUT =
  '[interrupted: Astra stopped while this command ran; its result was lost and the command was not run again]';

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function field(data: unknown, key: string): unknown {
  return data && typeof data === 'object' ? (data as Record<string, unknown>)[key] : undefined;
}

/** The data of the interrupted result the runtime appends for an orphaned tool call after a crash. */
export function interruptedToolResult(turnId: string, callId: string): ChatEventData['tool.result'] {
  return { turnId, callId, status: 'interrupted', output: INTERRUPTED_RESULT_OUTPUT };
}

/** Tool calls with no tool.result in the events, in order: what crash recovery must answer. */
export function unansweredToolCalls(events: readonly RecordedEvent[]): { turnId: string; callId: string }[] {
  const open = new Map<string, string>();
  for (const e of events) {
    const callId = str(field(e.data, 'callId'));
    if (callId === undefined) continue;
    if (e.type === 'tool.call') open.set(callId, str(field(e.data, 'turnId')) ?? '');
    else if (e.type === 'tool.result') open.delete(callId);
  }
  return [...open].map(([callId, turnId]) => ({ turnId, callId }));
}

/**
 * The messages for the model from a session's events (earliest first), after the system prompt.
 * Events of other types are skipped; so are empty assistant messages (a cancel before any text).
 */
export function buildTranscript(events: readonly RecordedEvent[], systemPrompt: string = DEFAULT_SYSTEM_PROMPT): ChatMessage[] {
  const out: ChatMessage[] = [{ role: 'system', content: systemPrompt }];
  let assistant: { content: string | null; calls: ToolCall[] } | undefined;
  const results = new Map<string, string>();

  const close = () => {
    if (!assistant) return;
    const { content, calls } = assistant;
    assistant = undefined;
    if (calls.length === 0) {
      if (content) out.push({ role: 'assistant', content });
      return;
    }
    out.push({ role: 'assistant', content: content || null, tool_calls: calls });
    for (const c of calls) out.push({ role: 'tool', tool_call_id: c.id, content: results.get(c.id) ?? INTERRUPTED_RESULT_OUTPUT });
  };

  for (const e of events) {
    switch (e.type) {
      case 'message.user': {
        close();
        const text = str(field(e.data, 'text'));
        if (text !== undefined) out.push({ role: 'user', content: text });
        break;
      }
      case 'message.completed':
        close();
        assistant = { content: str(field(e.data, 'text')) ?? '', calls: [] };
        break;
      case 'tool.call': {
        const id = str(field(e.data, 'callId'));
        if (id === undefined) break;
        assistant ??= { content: null, calls: [] };
        assistant.calls.push({ id, type: 'function', function: { name: str(field(e.data, 'name')) ?? '', arguments: str(field(e.data, 'arguments')) ?? '' } });
        break;
      }
      case 'tool.result': {
        const id = str(field(e.data, 'callId'));
        const output = str(field(e.data, 'output'));
        if (id !== undefined && output !== undefined) results.set(id, output);
        break;
      }
      case 'turn.completed':
        close();
        break;
    }
  }
  close();
  return out;
}
