// What the long-answer readers of the chat rows share: the conversation the daemon's engine sends
// for a long answer (so every reader sends the same request), and when a reader reports.
import type { ChatMessage } from '../../engines/chat/messages.js';
import { buildTranscript, type RecordedEvent } from '../../engines/chat/transcript.js';
import { TOKEN } from './model-gen.js';

/** An answer's report goes this long after the answer started (see AnswerReport). */
export const REPORT_AFTER_MS = 250;

/**
 * One reader's report of each answer, told to the bench well after the answer's end: at the end a
 * reader only notes the time. Anything more there — a report (a pipe write that wakes the bench),
 * reading the process's CPU, even arming a timer (30–40 µs each on this VM just after a wake) —
 * takes the two cores from the other readers still receiving that end, and the slowest of them is
 * what is measured. So the timer is armed at the answer's start, before its stream, and fires
 * REPORT_AFTER_MS later (again every 20 ms if the answer has not ended by then).
 */
export class AnswerReport<T> {
  private ended: T | undefined;
  private armed = false;

  /** `tell` gets what end() noted, when the report goes. */
  constructor(private readonly tell: (noted: T) => void) {}

  /** At the answer's start (turn.started; the relay's start frame). */
  start(): void {
    this.ended = undefined;
    this.arm(REPORT_AFTER_MS);
  }

  /** At the answer's end: notes what to tell, nothing else. */
  end(noted: T): void {
    this.ended = noted;
    if (!this.armed) this.arm(20);
  }

  private arm(ms: number): void {
    this.armed = true;
    setTimeout(this.fire, ms);
  }

  private readonly fire = () => {
    this.armed = false;
    const noted = this.ended;
    if (noted === undefined) return this.arm(20);
    this.ended = undefined;
    this.tell(noted);
  };
}

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
