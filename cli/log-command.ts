// `astra log <session> [--since SEQ] [--json] [--raw]`: a session's whole history, printed as `astra
// attach`'s replay shows it (cli/event-render.ts; command output as the raw bytes it was; on a
// terminal chat answers laid out as markdown, cli/chat-print.ts), or as one JSON event per line
// (output bytes in base64). Read page by page with session/read and written with
// the terminal's backpressure, one write per page, so a huge session costs a page of memory. Works for observers: it
// only reads.
import type { Command } from 'commander';
import type { SessionEvent } from '../protocol/index.js';
import type { AstraClient } from '../client/index.js';
import { AnswerBlocks, answerLayout } from './chat-print.js';
import { renderEvent, type RenderContext } from './event-render.js';
import { AgentThought } from './acp-render.js';
import { fail, paint, type Output } from './output.js';
import { SESSION_ARG } from './manage-commands.js';
import { resolveSession, withClient } from './session-util.js';

/** Events asked for per session/read (the daemon also cuts a page at about 7 MiB). */
const PAGE_EVENTS = 2000;

export function registerLogCommand(program: Command, out: Output, env: NodeJS.ProcessEnv): void {
  program
    .command('log')
    .description("print a session's whole history (what `astra attach` shows only the recent part of), then exit")
    .argument('<session>', SESSION_ARG)
    .option('--since <seq>', 'only the events after this seq (an event\'s seq is in --json output)')
    .option('--json', 'one event per line as JSON (command output bytes in base64, data.data)')
    .option('--raw', 'chat answers as the model wrote them (the default when stdout is not a terminal), not laid out as markdown')
    .action(async (sessionArg: string, o: { since?: string; json?: boolean; raw?: boolean }) => {
      let since = 0;
      if (o.since !== undefined) {
        if (!/^\d+$/.test(o.since) || !Number.isSafeInteger(Number(o.since))) fail(`--since takes an event's seq (a whole number ≥ 0), got "${o.since}"`);
        since = Number(o.since);
      }
      await withClient(env, 'astra log', async (c) => {
        const s = await resolveSession(c, sessionArg);
        const answers = o.json ? undefined : answerLayout(process.stdout, out.color, o.raw === true);
        await printHistory(c, s.id, since, o.json === true, out.color, answers && new AnswerBlocks(answers));
      });
    });
}

/** Writes to stdout, waiting while the pipe or terminal is full (a page at a time in memory). */
function write(chunk: string | Uint8Array): Promise<void> | undefined {
  if (process.stdout.write(chunk)) return undefined;
  return new Promise((resolve) => process.stdout.once('drain', resolve));
}

/** `answers`: chat answers laid out (a terminal); without it their text is printed as it came. */
async function printHistory(c: AstraClient, sessionId: string, sinceSeq: number, json: boolean, color: boolean, answers?: AnswerBlocks): Promise<void> {
  const ctx: { deniedTurns: Set<string>; previousHolder: RenderContext['previousHolder']; thought: AgentThought; toolTitles: Map<string, string> } = {
    deniedTurns: new Set(),
    previousHolder: null,
    thought: new AgentThought(),
    toolTitles: new Map(),
  };
  let atLineStart = true;
  let after = sinceSeq;
  for (;;) {
    const page = await c.session.read({ sessionId, sinceSeq: after, limit: PAGE_EVENTS });
    // One write per page (a write per event cost a syscall each on a pipe or terminal).
    const parts: Buffer[] = [];
    for (const e of page.events) {
      const part = json ? jsonLine(e) : rendered(e);
      if (part !== undefined) parts.push(typeof part === 'string' ? Buffer.from(part) : Buffer.from(part.buffer, part.byteOffset, part.byteLength));
    }
    if (parts.length > 0) {
      const waited = write(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
      if (waited) await waited;
    }
    if (page.events.length > 0) after = page.events[page.events.length - 1]!.seq;
    if (page.nextSeq === undefined || page.events.length === 0) break;
    after = Math.max(after, page.nextSeq);
  }
  // The history can stop in the middle of an answer (its turn still running).
  const rest = answers ? asLines(answers.end()) : '';
  if (rest) await write(rest);
  if (!json && !atLineStart) await write('\n');

  /** Whole lines of a laid-out answer, on a line of their own. */
  function asLines(lines: string[]): string {
    if (lines.length === 0) return '';
    const text = `${atLineStart ? '' : '\n'}${lines.join('\n')}\n`;
    atLineStart = true;
    return text;
  }

  /** What an event prints, or undefined for nothing. */
  function rendered(e: SessionEvent): string | Uint8Array | undefined {
    if (e.type === 'command.output') {
      const bytes = e.data.data;
      if (bytes.length === 0) return undefined;
      atLineStart = bytes[bytes.length - 1] === 0x0a;
      return bytes;
    }
    if (answers && e.type === 'message.delta') {
      // An agent's thought before the answer ends its line first.
      const endThought = ctx.thought.close();
      if (endThought) atLineStart = true;
      return endThought + asLines(answers.delta(e.data.turnId, e.data.text)) || undefined;
    }
    if (e.type === 'approval.resolved' && e.data.decision === 'deny' && e.data.by) ctx.deniedTurns.add(e.data.turnId);
    const previousHolder = ctx.previousHolder;
    if (e.type === 'lease.changed') ctx.previousHolder = e.data.holder;
    let text = answers ? asLines(answers.before(e)) : '';
    for (const r of renderEvent(e, color, { deniedTurns: ctx.deniedTurns, previousHolder, thought: ctx.thought, toolTitles: ctx.toolTitles })) {
      if (r.kind === 'output') {
        // A laid-out answer already ended its line.
        if (answers && e.type === 'message.completed') continue;
        text += r.stream === 'stderr' && color ? paint(true, 'red', r.text) : r.text;
        if (r.text.length > 0) atLineStart = r.text.endsWith('\n');
      } else {
        text += `${atLineStart ? '' : '\n'}${r.text}\n`;
        atLineStart = true;
      }
    }
    return text || undefined;
  }
}

/** An event as one JSON line, its output bytes in base64. */
function jsonLine(e: SessionEvent): string {
  if (e.type === 'command.output') return `${JSON.stringify({ ...e, data: { ...e.data, data: Buffer.from(e.data.data).toString('base64') } })}\n`;
  return `${JSON.stringify(e)}\n`;
}
