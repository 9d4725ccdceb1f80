// What the long-answer readers of the chat rows share: the conversation the daemon's engine sends
// for a long answer (so every reader sends the same request), and when a reader reports.
import type { ChatMessage } from '../../runtime/chat/messages.js';
import { buildTranscript, type RecordedEvent } from '../../runtime/chat/transcript.js';
import { TOKEN } from './model-gen.js';

/**
 * A reader reports an answer's end this long after it: a report at once (a pipe write that wakes the
 * bench) would take CPU from the readers still receiving that answer's end, which is what is measured.
 */
export const REPORT_DELAY_MS = 20;

/** The events of `earlier` long answers in a session, each asked with `tokens=N` and answered in full. */
export function earlierLongAnswers(earlier: number, tokens: number): RecordedEvent[] {
  const events: RecordedEvent[] = [];
  const text = TOKEN.repeat(tokens);
  for (let i = 0; i < earlier; i++)
    events.push(
      { type: 'message.user', data: { text: `tokens=${tokens}` } },
      { type: 'message.completed', data: { text, finishReason: 'stop' } },
      { type: 'turn.completed', data: { status: 'completed' } },
    );
  return events;
}

/**
 * The messages the daemon's engine sends for the long answer after `earlier` ones in its session,
 * built by the engine's own transcript code: megabytes of history by the last round, and parsing
 * them slows the server's next stream by several per cent, so a reader sending one line would be
 * faster for reasons that are not Astra's.
 */
export function longAnswerRequest(earlier: number, tokens: number): ChatMessage[] {
  const messages = buildTranscript(earlierLongAnswers(earlier, tokens));
  messages.push({ role: 'user', content: `tokens=${tokens}` });
  return messages;
}
