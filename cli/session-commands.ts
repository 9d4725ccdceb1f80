// The user commands (README.md, docs/operations.md): `astra new`, `sessions`, `attach`, `send`, `cancel`, `take`
// (`rename`, `archive`, `rm`: cli/manage-commands.ts).
import path from 'node:path';
import { Option, type Command } from 'commander';
import { AstraError, type DaemonStatus, type Session, type SessionEvent } from '../protocol/index.js';
import type { AstraClient } from '../client/index.js';
import { attach } from './attach/attach.js';
import { displayWidth, fitWidth, padWidth } from './view/width.js';
import { agentProgress, answerLayout, answerLines } from './chat-print.js';
import { eventToJson, turnEndText } from './event-render.js';
import { acpEngineOptions, addAcpOptions, engineText } from './acp-options.js';
import { ExitCode, cleanText, fail, style, wrapText, type Output } from './output.js';
import { SESSION_ARG, registerManageCommands } from './manage-commands.js';
import { acquireOrExplain, connectClient, describeHolder, formatAgo, listAllSessions, resolveSession, withClient } from './session-util.js';

/** Exit code of `send --wait` for a turn that was cancelled (like a shell's SIGINT). */
const EXIT_CANCELLED = 130;

export function registerSessionCommands(program: Command, out: Output, env: NodeJS.ProcessEnv, setExit: (code: number) => void): void {
  addAcpOptions(program
    .command('new')
    .description('create a session and print its id (only the id, so `id=$(astra new)` works)')
    .option('--title <title>', 'a title shown in `astra sessions`')
    .option('--cwd <dir>', 'the directory commands run in (default: the current one)')
    .addOption(new Option('--approval <policy>', 'ask: the controller approves each command; auto: run at once').choices(['ask', 'auto']).default('ask'))
    .option('--approval-timeout <seconds>', 'an approval nobody answers within this long is denied (default: it waits)')
    .option('--engine <name>', 'shell (a turn is a command line), chat (a turn is a message to a model), acp (a prompt to an agent, with --agent); default shell, chat with --model, acp with --agent')
    .option('--model <name>', 'chat: the model the server knows, e.g. llama3.1 (default: the daemon\'s ASTRA_CHAT_MODEL)')
    .option('--base-url <url>', 'chat: the OpenAI-compatible API base, e.g. http://127.0.0.1:11434/v1 (default: the daemon\'s ASTRA_CHAT_BASE_URL)')
    .option('--system-prompt <text>', 'chat: replaces the built-in system prompt')
    .option('--max-steps <n>', 'chat: model requests per turn (default 25)'))
    .action(async (o: NewOptions) => {
      const cwd = path.resolve(o.cwd ?? process.cwd());
      const params = newSessionParams(o, cwd);
      const session = await withClient(env, 'astra new', async (c) => (await c.session.create(params)).session);
      out.stdout(session.id);
    });

  program
    .command('sessions')
    .description('list sessions: id, title, state, controller, observers, last activity')
    .option('--json', 'print a JSON array of sessions (each with its controller or null, observers and pendingApprovals)')
    .option('--all', 'include archived sessions')
    .action(async (o: { json?: boolean; all?: boolean }) => {
      const { sessions, status } = await withClient(env, 'astra sessions', async (c) => ({
        sessions: await listAllSessions(c, Boolean(o.all)),
        status: await c.daemon.status(),
      }));
      // Observers and pending approvals are the daemon's to know (loaded sessions only; others have none).
      const live = new Map<string, DaemonStatus['sessions'][number]>(status.sessions.map((s: DaemonStatus['sessions'][number]) => [s.id, s]));
      if (o.json) {
        const rows = sessions.map((s) => ({ ...s, controller: s.controller ?? null, observers: live.get(s.id)?.observers ?? 0, pendingApprovals: live.get(s.id)?.pendingApprovals ?? 0 }));
        out.stdout(JSON.stringify(rows, null, 2));
        return;
      }
      if (sessions.length === 0) {
        out.stdout(o.all ? 'no sessions yet; create one with `astra new`' : 'no sessions yet (`--all` shows archived ones); create one with `astra new`');
        return;
      }
      printSessionTable(out, sessions, live);
    });

  program
    .command('attach')
    .description('a live terminal on a session: recent history, then live; the controller types commands (and into running programs) and approves, observers watch')
    .argument('[session]', `${SESSION_ARG}; without one, the most recently active session`)
    .option('--observe', 'only watch; never take control')
    .option('--take', 'take control even if another terminal has it (it is told)')
    .option('--prefix <key>', 'the prefix key that gets Astra\'s keys while a program has the keyboard (default C-], or ASTRA_PREFIX_KEY)')
    .addHelpText('after', () =>
      wrapText(
        '\nWhile a command runs in a pseudo-terminal, every key goes to it (Ctrl-C too) and a status line stays on the last row. ' +
          'Astra\'s own keys are the prefix (Ctrl-]) then:\n' +
          '  c        cancel the turn (or Ctrl-C after the prefix)\n' +
          '  d        detach (the command keeps running)\n' +
          '  t        take control (Ctrl-T also works for an observer)\n' +
          '  l        redraw the status line;  ?  show these keys\n' +
          '  Ctrl-]   send Ctrl-] itself to the program\n' +
          'Otherwise (idle, a chat answer, a command on pipes):\n' +
          '  Enter    start a turn with the typed line;  y / n  answer an approval (an agent\'s options: 1..n)\n' +
          '  Ctrl-C   cancel the running turn (again, or with nothing running: detach)\n' +
          '  Ctrl-D   detach on an empty line (a running turn keeps running)\n' +
          '  Ctrl-T   take control (not with --observe, which is read-only)\n' +
          '  editing  arrows, Home/End, Ctrl-A/E/W/K/U, Up/Down for history; a paste is one input;  Ctrl-L  redraw\n' +
          'Attaching shows about the last 1,000 lines of history (`astra log ID` prints all of it) and a running program\'s current screen. ' +
          'The terminal is put back (mouse, alternate screen, cursor, keypad) when a program ends and when you detach; programs cannot change its title. ' +
          'Without --observe, a terminal that watches because someone else has control takes it when it becomes free. ' +
          'Closing the window releases control, as Ctrl-D does.',
      ),
    )
    .action(async (sessionArg: string | undefined, o: { observe?: boolean; take?: boolean; prefix?: string }) => {
      setExit(await attach(sessionArg, o, { stdin: process.stdin, stdout: process.stdout, env }));
    });

  program
    .command('send')
    .description('start a turn without a terminal view (acquires control for the call)')
    .argument('<session>', SESSION_ARG)
    .argument('<text>', 'the input: for the shell engine, a command line; for chat, a message to the model')
    .option('--wait', 'stream the output and exit with the command\'s exit code (chat: print the final answer)')
    .option('--json', 'print the turn\'s events as JSON lines (output bytes as UTF-8 text)')
    .option('--yes', 'approve the command yourself (otherwise it waits for an attached controller unless the session is auto)')
    .option('--raw', 'with --wait, a chat answer as the model wrote it (the default when stdout is not a terminal), not laid out as markdown')
    .action(async (sessionArg: string, text: string, o: SendOptions) => {
      setExit(await send(env, out, sessionArg, text, o));
    });

  program
    .command('cancel')
    .description('cancel the running turn of a session')
    .argument('<session>', SESSION_ARG)
    .option('--wait', 'wait until the turn has stopped')
    .action(async (sessionArg: string, o: { wait?: boolean }) => {
      await withClient(env, 'astra cancel', async (c) => {
        const s = await resolveSession(c, sessionArg);
        if (!s.runningTurnId) {
          out.stdout(`no turn is running in ${s.id}`);
          return;
        }
        await acquireOrExplain(c, s.id);
        let ended: Promise<SessionEvent<'turn.completed'>> | undefined;
        if (o.wait) ended = waitForTurnEnd(c, s.id, s.headSeq, s.runningTurnId);
        const r = await c.turn.cancel({ sessionId: s.id, turnId: s.runningTurnId });
        out.stdout(`${r.status === 'cancelling' ? 'cancelling' : `already ${r.status}:`} turn ${r.turnId} of ${s.id}`);
        if (ended) out.stdout(turnEndText((await ended).data));
      });
    });

  program
    .command('take')
    .description('take control of a session away from its controller and leave it free (the old controller is told)')
    .argument('<session>', SESSION_ARG)
    .addHelpText('after', () =>
      wrapText(
        '\nA one-shot command cannot keep a lease, so `take` revokes the current controller and releases control at once: ' +
          'the next `astra attach` (or `send`, `cancel`) gets it. A running turn keeps running.',
      ),
    )
    .action(async (sessionArg: string) => {
      await withClient(env, 'astra take', async (c) => {
        const s = await resolveSession(c, sessionArg);
        if (!s.controller) {
          out.stdout(`nobody controls ${s.id}; control is free`);
          return;
        }
        const from = describeHolder(s.controller);
        const lease = await c.acquireController(s.id, { takeover: true });
        await lease.release();
        out.stdout(`took control of ${s.id} from ${from}; control is now free (${style(out, 'dim', `\`astra attach ${s.id}\` to control it`)})`);
      });
    });

  registerManageCommands(program, out, env);
}

/** What a session is doing, in the words of `astra sessions`. */
export function sessionStateText(s: Session, pendingApprovals: number): string {
  if (pendingApprovals > 0) return 'waiting for approval';
  return s.state === 'running' || s.runningTurnId ? 'running' : s.state;
}

function printSessionTable(out: Output, sessions: Session[], live: Map<string, DaemonStatus['sessions'][number]>): void {
  const rows = sessions.map((s) => {
    const title = cleanText(s.title);
    return [
      s.id,
      fitWidth(title, 30),
      engineText(s),
      sessionStateText(s, live.get(s.id)?.pendingApprovals ?? 0),
      s.controller ? `${describeHolder(s.controller)}${s.controller.graceUntil !== undefined ? ' (grace)' : ''}` : '-',
      String(live.get(s.id)?.observers ?? 0),
      formatAgo(s.updatedAt),
    ];
  });
  const head = ['ID', 'TITLE', 'ENGINE', 'STATE', 'CONTROLLER', 'OBSERVERS', 'LAST ACTIVITY'];
  // Display columns, not UTF-16 units: a CJK or emoji title takes two columns a character.
  const widths = head.map((h, i) => Math.max(displayWidth(h), ...rows.map((r) => displayWidth(r[i]!))));
  const fmt = (r: string[]) => r.map((v, i) => (i === r.length - 1 ? v : padWidth(v, widths[i]!))).join('  ');
  out.stdout(style(out, 'bold', fmt(head)));
  for (const r of rows) out.stdout(fmt(r));
}

/** Resolves with the turn's `turn.completed` (the subscription starts at `sinceSeq`, so it cannot be missed). */
async function waitForTurnEnd(client: AstraClient, sessionId: string, sinceSeq: number, turnId: string): Promise<SessionEvent<'turn.completed'>> {
  return new Promise((resolve, reject) => {
    client
      .subscribe(sessionId, {
        sinceSeq,
        onEvent: (e) => {
          if (e.type === 'turn.completed' && e.data.turnId === turnId) resolve(e);
        },
        onEnd: (err) => reject(err ?? new AstraError('connection_closed', 'the event stream ended before the turn did')),
      })
      .catch(reject);
  });
}

interface NewOptions {
  title?: string;
  cwd?: string;
  approval: 'ask' | 'auto';
  engine?: string;
  model?: string;
  baseUrl?: string;
  systemPrompt?: string;
  maxSteps?: string;
  approvalTimeout?: string;
  agent?: string;
  agentEnv?: string[];
}

/** session/create's params from `astra new`'s flags; the daemon checks the chat options (a bad URL is its invalid_params). */
type NewSessionParams = { cwd: string; approvalPolicy: 'ask' | 'auto'; title?: string; engine?: string; engineOptions?: Record<string, unknown>; approvalTimeoutMs?: number };

function newSessionParams(o: NewOptions, cwd: string): NewSessionParams {
  const chat: Record<string, unknown> = {};
  if (o.model !== undefined) chat.model = o.model;
  if (o.baseUrl !== undefined) chat.baseUrl = o.baseUrl;
  if (o.systemPrompt !== undefined) chat.systemPrompt = o.systemPrompt;
  if (o.maxSteps !== undefined) {
    const n = Number(o.maxSteps);
    if (!Number.isInteger(n) || n < 1) fail(`--max-steps must be a whole number of model requests, such as 25 (got ${o.maxSteps})`);
    chat.maxSteps = n;
  }
  const hasChat = Object.keys(chat).length > 0;
  const engine = o.engine ?? (hasChat ? 'chat' : o.agent !== undefined || o.agentEnv !== undefined ? 'acp' : undefined);
  if ((o.agent !== undefined || o.agentEnv !== undefined) && engine !== 'acp') fail(`--agent and --agent-env are options of the acp engine: use --engine acp (not ${engine})`);
  if (hasChat && engine !== 'chat') fail(`--model, --base-url, --system-prompt and --max-steps are options of the chat engine: use --engine chat (not ${engine})`);
  const p: NewSessionParams = { cwd, approvalPolicy: o.approval };
  if (o.approvalTimeout !== undefined) {
    const secs = Number(o.approvalTimeout);
    if (!Number.isFinite(secs) || secs < 1 || secs > 7 * 24 * 3600) fail(`--approval-timeout must be a number of seconds from 1 to 604800 (got ${o.approvalTimeout})`);
    p.approvalTimeoutMs = Math.round(secs * 1000);
  }
  if (o.title !== undefined) p.title = o.title;
  if (engine !== undefined) p.engine = engine;
  if (engine === 'chat') p.engineOptions = chat;
  if (engine === 'acp') p.engineOptions = acpEngineOptions(o.agent, o.agentEnv);
  return p;
}

interface SendOptions {
  wait?: boolean;
  json?: boolean;
  yes?: boolean;
  raw?: boolean;
}

async function send(env: NodeJS.ProcessEnv, out: Output, sessionArg: string, text: string, o: SendOptions): Promise<number> {
  if (text.trim().length === 0) fail('the text is empty: give a command line, e.g. astra send <session> "ls -la"');
  const client = await connectClient(env, 'astra send');
  let onSigint: (() => void) | undefined;
  try {
    const s = await resolveSession(client, sessionArg);
    if (s.state === 'archived') fail(`session ${s.id} is archived; create a new one with \`astra new\``);
    const needsAnswer = s.approvalPolicy === 'ask';
    // A chat (or agent) turn may ask for approval again after each tool result: control stays here to the end.
    const chat = s.engine === 'chat' || s.engine === 'acp';
    const progress = s.engine === 'acp' && o.wait && !o.json ? agentProgress(out.color) : undefined;
    let answer: string | undefined;
    const lease = await acquireOrExplain(client, s.id);

    let turnId: string | undefined;
    let gotTurnId!: (id: string) => void;
    const turnIdKnown = new Promise<string>((r) => (gotTurnId = r));
    if (o.yes) {
      client.onApproval(async (req): Promise<'approve'> => {
        // Only our own turn: a pending approval of someone else's turn is offered at grant time too.
        if (req.sessionId !== s.id || req.turnId !== (await turnIdKnown))
          throw new AstraError('not_found', 'astra send --yes only approves the turn it started');
        return 'approve';
      });
    }
    const approvalNeeded = `astra: approval needed: the command waits for a controller to approve it; run \`astra attach ${s.id}\` to approve it, or pass --yes\n`;

    // Control is held only until the turn is underway (started, and approved when that is ours to do):
    // then it is released, so `astra cancel` or an attached terminal can act on the running turn.
    let underway!: () => void;
    const isUnderway = new Promise<void>((r) => (underway = r));
    let outcome: Promise<number> | undefined;
    let settle!: (code: number) => void;
    const follow = Boolean(o.wait) || (needsAnswer && Boolean(o.yes));
    if (follow) {
      outcome = new Promise<number>((r) => (settle = r));
      const early: SessionEvent[] = [];
      const handle = (e: SessionEvent): void => {
        if ((e.data as { turnId?: unknown }).turnId !== turnId) return;
        if (o.wait && o.json) out.stdout(eventToJson(e));
        if (progress) process.stderr.write(progress(e));
        switch (e.type) {
          case 'command.output':
            // A chat turn's answer is what stdout gets; its tools' output is the model's business.
            if (o.wait && !o.json && !chat) (e.data.stream === 'stderr' ? process.stderr : process.stdout).write(Buffer.from(e.data.data));
            return;
          case 'message.completed':
            // An agent's answer is every message of its turn (between them it used tools).
            if (e.data.finishReason !== 'tool_calls') answer = progress && answer ? `${answer}\n\n${e.data.text}` : e.data.text;
            return;
          case 'tool.call':
            if (o.wait && !o.json && !progress) process.stderr.write(`astra: the model calls ${e.data.name} ${e.data.arguments}\n`);
            return;
          case 'approval.requested':
            if (needsAnswer && !o.yes) {
              process.stderr.write(approvalNeeded);
              settle(ExitCode.error);
            }
            return;
          case 'approval.resolved':
          case 'command.started':
            if (!chat) underway();
            return;
          case 'turn.completed':
            underway();
            if (o.wait && !o.json && chat && answer !== undefined) for (const l of answerLines(answer, answerLayout(process.stdout, out.color, o.raw))) out.stdout(l);
            if (!o.json && e.data.status !== 'completed') process.stderr.write(`astra: ${turnEndText(e.data)}\n`);
            settle(turnExit(e.data));
            return;
        }
      };
      // From the snapshot's head, subscribed before the turn starts: none of its events can be missed.
      await client.subscribe(s.id, {
        sinceSeq: s.headSeq,
        onEvent: (e) => (turnId === undefined ? early.push(e) : handle(e)),
        onEnd: (err) => {
          if (err) {
            process.stderr.write(`astra: lost the session's event stream: ${err.message}\n`);
            settle(ExitCode.error);
          }
        },
      });
      void turnIdKnown.then(() => {
        for (const e of early.splice(0)) handle(e);
      });
    }

    // The same safe start as attach: a lost answer is resolved through mutation/status, never a second turn.
    // `--wait` follows the turn: it is this connection's, cancelled if the connection drops for longer than the grace.
    turnId = (await client.startTurn(s.id, text, o.wait ? { cancelOnDisconnect: true } : {})).turnId;
    gotTurnId(turnId);
    const printTurn = () => out.stdout(o.json ? JSON.stringify({ sessionId: s.id, turnId }) : turnId!);

    if (!follow) {
      printTurn();
      if (needsAnswer) process.stderr.write(approvalNeeded);
      return ExitCode.ok;
    }
    if (!needsAnswer) underway();
    if (!o.wait) {
      // --yes without --wait: stay only until our approval went through.
      await Promise.race([isUnderway, outcome]);
      printTurn();
      return ExitCode.ok;
    }
    void isUnderway.then(() => (lease.held ? lease.release() : undefined)).catch(() => undefined);

    // Ctrl-C cancels the turn like a foreground command; a second one stops waiting and leaves it running.
    let interrupts = 0;
    onSigint = () => {
      interrupts++;
      if (interrupts > 1) {
        process.stderr.write(`astra: stopped waiting; turn ${turnId} keeps running (\`astra attach ${s.id}\` to watch)\n`);
        settle(EXIT_CANCELLED);
        return;
      }
      process.stderr.write('astra: cancelling the turn (Ctrl-C again to stop waiting)\n');
      cancelTurn(client, s.id, turnId!).catch((e: unknown) => {
        process.stderr.write(`astra: could not cancel: ${e instanceof Error ? e.message : String(e)}\n`);
      });
    };
    process.on('SIGINT', onSigint);
    return await outcome!;
  } finally {
    if (onSigint) process.off('SIGINT', onSigint);
    // Releasing leaves the turn running (a disconnect would start a grace period that ends by cancelling it).
    await client.close({ releaseLeases: true });
  }
}

/** Cancels a turn, taking control for the call if this client does not hold it. */
async function cancelTurn(client: AstraClient, sessionId: string, turnId: string): Promise<void> {
  const held = client.heldLeases.get(sessionId);
  const lease = held ?? (await acquireOrExplain(client, sessionId));
  try {
    await client.turn.cancel({ sessionId, turnId });
  } finally {
    if (!held) await lease.release().catch(() => undefined);
  }
}

function turnExit(d: SessionEvent<'turn.completed'>['data']): number {
  // A shell turn's exit code; a turn without one (chat) that completed is a success.
  if (d.status === 'completed') return typeof d.exitCode === 'number' ? d.exitCode : d.exitCode === undefined ? ExitCode.ok : ExitCode.error;
  if (d.status === 'cancelled') return EXIT_CANCELLED;
  return ExitCode.error;
}
