// An in-memory ChatEngineContext for the chat engine's tests: records every event, answers approvals
// as the test says, and runs tool commands for real (own process group, command.* events, killed on
// cancel) the way the runtime will. Also a tiny "session" that runs turns one after another with the
// journal's events as history, as the runtime does.
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import type { ApprovalPolicy } from '../../../protocol/index.js';
import type { ChatEngineContext, ChatSessionOptions, RecordedEvent, ToolCommandOutcome } from '../../../engines/chat/index.js';
import { OutputCapture, chatCommandEnv, createChatEngine, type ChatEngineConfig } from '../../../engines/chat/index.js';
import type { EngineResult } from '../../../runtime/index.js';

export interface Recorded {
  type: string;
  data: Record<string, unknown>;
  /** performance.now() when it was emitted. */
  at?: number;
}

export interface ApprovalAsk {
  command: string;
  cwd: string;
}

export interface SessionOptions {
  options: ChatSessionOptions;
  cwd: string;
  approvalPolicy?: ApprovalPolicy;
  config?: Partial<ChatEngineConfig>;
  /** Answers each approval; default approve. */
  decide?: (ask: ApprovalAsk) => 'approve' | 'deny' | Promise<'approve' | 'deny'>;
  /** Events already in the journal (e.g. left by a crash). */
  history?: Recorded[];
  /** The daemon's environment the tool commands' is made from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** What emit() returns for the n-th event (1-based; default true) and what drained() waits for. */
  backpressure?: { emitReturns: (n: number) => boolean; drained: () => Promise<void> };
}

export function chatSession(o: SessionOptions) {
  const engine = createChatEngine({ stallMs: 5_000, ...o.config });
  const events: Recorded[] = [...(o.history ?? [])];
  const approvals: ApprovalAsk[] = [];
  const pids: number[] = [];
  let n = 0;
  let current: AbortController | undefined;

  function runCommand(signal: AbortSignal, turnId: string, emit: (type: string, data: Record<string, unknown>) => void) {
    return (req: { command: string; cwd: string; captureBytes: number }): Promise<ToolCommandOutcome> =>
      new Promise((resolve) => {
        const capture = new OutputCapture(req.captureBytes);
        try {
          if (!fs.statSync(req.cwd).isDirectory()) throw new Error('not a directory');
        } catch (e) {
          resolve({ outcome: 'not_started', exitCode: null, signal: null, output: capture.result(), error: `cwd ${req.cwd} is not usable: ${(e as Error).message}` });
          return;
        }
        const child = spawn('/bin/sh', ['-c', req.command], { cwd: req.cwd, env: chatCommandEnv(o.env ?? process.env), detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
        const pid = child.pid!;
        pids.push(pid);
        emit('command.started', { turnId, command: req.command, cwd: req.cwd, pid });
        let cancelled = false;
        const onData = (stream: string) => (b: Buffer) => {
          capture.push(b);
          emit('command.output', { turnId, stream, data: b });
        };
        child.stdout!.on('data', onData('stdout'));
        child.stderr!.on('data', onData('stderr'));
        const kill = () => {
          cancelled = true;
          try {
            process.kill(-pid, 'SIGKILL');
          } catch {
            /* gone */
          }
        };
        signal.addEventListener('abort', kill, { once: true });
        child.on('close', (code, sig) => {
          signal.removeEventListener('abort', kill);
          emit('command.completed', { turnId, exitCode: code, signal: sig });
          resolve({ outcome: cancelled ? 'cancelled' : 'exited', exitCode: code, signal: sig, output: capture.result() });
        });
      });
  }

  return {
    events,
    approvals,
    pids,
    /** Starts a turn; `cancel()` cancels the one running. */
    turn(text: string, policy: ApprovalPolicy = o.approvalPolicy ?? 'auto'): Promise<EngineResult> & { turnId: string } {
      const turnId = `turn-${++n}`;
      const abort = new AbortController();
      current = abort;
      let emitted = 0;
      const emit = (type: string, data: Record<string, unknown>) => {
        events.push({ type, data, at: performance.now() });
      };
      emit('turn.started', { turnId, input: { text } });
      emit('message.user', { turnId, text });
      const ctx: ChatEngineContext = {
        sessionId: 'sess-1',
        turnId,
        cwd: o.cwd,
        input: { text },
        approvalPolicy: policy,
        signal: abort.signal,
        engineOptions: o.options,
        emit: ((type: string, data: Record<string, unknown>) => {
          emit(type, data);
          return o.backpressure ? o.backpressure.emitReturns(++emitted) : true;
        }) as ChatEngineContext['emit'],
        drained: o.backpressure ? o.backpressure.drained : async () => undefined,
        requestApproval: async (req) => {
          approvals.push({ command: req.command, cwd: req.cwd });
          emit('approval.requested', { turnId, approvalId: `ap-${approvals.length}`, command: req.command, cwd: req.cwd });
          const decision = await Promise.race([
            Promise.resolve((o.decide ?? (() => 'approve' as const))({ command: req.command, cwd: req.cwd })),
            new Promise<never>((_, reject) => {
              if (abort.signal.aborted) reject(new Error('AbortError'));
              abort.signal.addEventListener('abort', () => reject(Object.assign(new Error('cancelled'), { name: 'AbortError' })), { once: true });
            }),
          ]);
          emit('approval.resolved', { turnId, approvalId: `ap-${approvals.length}`, decision });
          return decision;
        },
        history: async () => events.map((e): RecordedEvent => ({ type: e.type, data: e.data })),
        runCommand: (req) => runCommand(abort.signal, turnId, emit)(req),
      };
      const p = engine.runTurn(ctx).then((r) => {
        emit('turn.completed', { turnId, status: r.status, ...(r.error !== undefined ? { error: r.error } : {}) });
        return r;
      });
      return Object.assign(p, { turnId });
    },
    cancel() {
      current?.abort();
    },
    of(type: string): Recorded[] {
      return events.filter((e) => e.type === type);
    },
    cleanup() {
      for (const pid of pids) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    },
  };
}

/** Polls until `fn` is truthy, failing with `what` after the deadline. */
export async function until<T>(fn: () => T | undefined | false, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
