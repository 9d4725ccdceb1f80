// The `chat` engine: a model behind any OpenAI-compatible Chat Completions server, with one
// tool, `shell`, whose every call goes through the session's approvals. One turn is a loop: send the
// conversation (rebuilt from the journal), stream the answer as message.delta events, and for each
// tool call ask for approval, run the command as the shell engine does, send back its result; until
// the model answers without a tool call, the turn is cancelled, a fault ends it, or maxSteps requests
// have been made.
import * as path from 'node:path';
import { isAstraError, type EventData } from '../../protocol/index.js';
import type { Engine, EngineContext, EngineResult } from '../../runtime/engine.js';
import { isChatTurnContext, type ChatEngineContext } from './context.js';
import { SHELL_TOOL_NAME, type ChatEventData, type ChatEventType, type ChatMessage, type ToolCall, type ToolResultStatus } from './messages.js';
import { DeltaPacer } from './delta-pacer.js';
import { ModelCancelledError, ModelError, streamChatCompletion } from './model-stream.js';
import { CHAT_CONFIG_DEFAULTS, parseChatOptions, type ChatEngineConfig } from './options.js';
import { chatAvailability } from './availability.js';
import { formatToolOutput } from './tool-output.js';
import { runToolCommand } from './tool-command.js';
import { DEFAULT_SYSTEM_PROMPT, TRANSCRIPT_EVENT_TYPES, buildTranscript, interruptedToolResult, unansweredToolCalls } from './transcript.js';

type ChatEmit = <T extends ChatEventType>(type: T, data: ChatEventData[T]) => boolean;

// Fails to compile if a ChatEventData shape stops fitting protocol/'s: the cast below is then wrong.
type Fits = { [K in ChatEventType]: ChatEventData[K] extends EventData<K> ? true : never };
const FITS: Fits = { 'message.delta': true, 'message.completed': true, 'tool.call': true, 'tool.result': true, usage: true, error: true };
void FITS;

/** EngineContext.emit, held to the fields the engine always sets (ChatEventData). */
function chatEmitter(ctx: EngineContext): ChatEmit {
  return <T extends ChatEventType>(type: T, data: ChatEventData[T]) => ctx.emit<T>(type, data as unknown as EventData<T>);
}

type Answer =
  | { kind: 'answer'; text: string; toolCalls: ToolCall[] }
  | { kind: 'cancelled' }
  | { kind: 'failed'; error: ModelError | { code: string; message: string; retryable: boolean } };

interface ToolRun {
  status: ToolResultStatus;
  exitCode?: number | null;
  output: string;
  /** The turn was cancelled during or before this call. */
  cancelled?: true;
}

/**
 * One engine for the daemon; each session's model, URL and limits come in ctx.engineOptions, checked
 * at session/create against `env`'s defaults (ASTRA_CHAT_MODEL, ASTRA_CHAT_BASE_URL).
 */
export function createChatEngine(config: Partial<ChatEngineConfig> = {}, env: Record<string, string | undefined> = process.env): Engine {
  const cfg: ChatEngineConfig = { ...CHAT_CONFIG_DEFAULTS, ...config };
  return {
    parseOptions: (raw) => parseChatOptions(raw, env),
    availability: chatAvailability(env, { proxied: cfg.proxy !== undefined }),
    events: ['message.delta', 'message.completed', 'tool.call', 'tool.result', 'usage', 'error', 'command.started', 'command.output', 'command.completed'],
    history: TRANSCRIPT_EVENT_TYPES,
    // Every tool call gets its result before the turn ends, so the next model request is valid; the
    // command is not run again.
    interrupted: ({ history }) => unansweredToolCalls(history).map((c) => ({ type: 'tool.result', data: interruptedToolResult(c.turnId, c.callId) })),
    async runTurn(base: EngineContext): Promise<EngineResult> {
      if (!isChatTurnContext(base))
        return { status: 'failed', error: "the chat engine needs the session's history (ctx.history()) and its checked engineOptions (ChatEngineContext), which this context does not give" };
      const runCommand = base.runCommand ?? ((req) => runToolCommand(base, req));
      return runChatTurn({ ...base, runCommand }, cfg);
    },
  };
}

async function runChatTurn(ctx: ChatEngineContext, cfg: ChatEngineConfig): Promise<EngineResult> {
  const emit = chatEmitter(ctx);
  const opts = ctx.engineOptions;
  let earlier;
  try {
    earlier = (await ctx.history()).filter((e) => (e.data as { turnId?: unknown } | null)?.turnId !== ctx.turnId);
  } catch (e) {
    return { status: 'failed', error: `could not read the session's earlier events for the conversation: ${(e as Error).message}` };
  }
  const messages = buildTranscript(earlier, opts.systemPrompt ?? DEFAULT_SYSTEM_PROMPT);
  messages.push({ role: 'user', content: ctx.input.text });
  // Ids the model gave must be unique in the session: the transcript pairs results with calls by id.
  const usedIds = new Set<string>();
  for (const m of messages) if (m.role === 'tool') usedIds.add(m.tool_call_id);

  for (let step = 1; ; step++) {
    if (ctx.signal.aborted) return { status: 'cancelled' };
    const answer = await streamAnswer(ctx, emit, cfg, messages);
    if (answer.kind === 'cancelled') return { status: 'cancelled' };
    if (answer.kind === 'failed') {
      const { code, message, retryable } = answer.error;
      emit('error', { turnId: ctx.turnId, code, message, retryable });
      return { status: 'failed', error: message };
    }
    if (answer.toolCalls.length === 0) return { status: 'completed' };

    const calls = answer.toolCalls.map((c, i) => {
      let id = c.id && !usedIds.has(c.id) ? c.id : `call_${ctx.turnId}_${step}_${i}`;
      while (usedIds.has(id)) id += '_';
      usedIds.add(id);
      // Sent back in the next request, where some servers refuse arguments that are not JSON text.
      return { ...c, id, function: { ...c.function, arguments: c.function.arguments || '{}' } };
    });
    messages.push({ role: 'assistant', content: answer.text || null, tool_calls: calls });
    // The whole answer is in the journal before anything runs: after a crash it is all there.
    for (const c of calls) emit('tool.call', { turnId: ctx.turnId, callId: c.id, name: c.function.name, arguments: c.function.arguments });

    const lastStep = step >= opts.maxSteps;
    let cancelled = false;
    for (const c of calls) {
      let run: ToolRun;
      if (lastStep) run = { status: 'interrupted', output: `[not run: the turn reached its limit of ${opts.maxSteps} model requests (maxSteps)]` };
      else if (cancelled || ctx.signal.aborted) run = { status: 'interrupted', output: '[not run: the user cancelled the turn]', cancelled: true };
      else run = await runTool(ctx, cfg, c);
      if (run.cancelled) cancelled = true;
      const data: ChatEventData['tool.result'] = { turnId: ctx.turnId, callId: c.id, status: run.status, output: run.output };
      if (run.exitCode !== undefined) data.exitCode = run.exitCode;
      emit('tool.result', data);
      messages.push({ role: 'tool', tool_call_id: c.id, content: run.output });
    }
    if (cancelled) return { status: 'cancelled' };
    if (lastStep) {
      const message =
        `the model asked for tools in each of its ${opts.maxSteps} requests without a final answer (maxSteps ${opts.maxSteps}): ` +
        'send a message to let it go on, or create the session with a larger maxSteps';
      emit('error', { turnId: ctx.turnId, code: 'max_steps', message, retryable: false });
      return { status: 'failed', error: message };
    }
  }
}

/**
 * One model request, streamed as message.delta events paced by deltaIntervalMs (delta-pacer.ts: what
 * arrives in one tick is one event; the next waits for the interval, text arriving meanwhile joining it).
 */
async function streamAnswer(ctx: ChatEngineContext, emit: ChatEmit, cfg: ChatEngineConfig, messages: ChatMessage[]): Promise<Answer> {
  const opts = ctx.engineOptions;
  const turnId = ctx.turnId;
  // The answer's parts, joined once at its end (a flat string for message.completed; a rope of a
  // part per read would be flattened while that event is encoded, on the event loop).
  const parts: string[] = [];
  const answerText = () => (parts.length === 1 ? parts[0]! : parts.join(''));
  let behind = false;
  const pacer = new DeltaPacer(
    cfg.deltaIntervalMs,
    (text) => {
      if (!emit('message.delta', { turnId, text })) behind = true;
    },
    cfg.now,
  );
  let finishReason = '';
  let toolCalls: ToolCall[] = [];
  let usage: { promptTokens: number; completionTokens: number } | undefined;
  try {
    const stream = streamChatCompletion({
      baseUrl: opts.baseUrl,
      model: opts.model,
      ...(cfg.apiKey !== undefined ? { apiKey: cfg.apiKey } : {}),
      messages,
      signal: ctx.signal,
      stallMs: cfg.stallMs,
      maxRetryAfterMs: cfg.maxRetryAfterMs,
      maxAttempts: cfg.maxAttempts,
      maxAnswerChars: cfg.maxAnswerChars,
      ...(cfg.proxy ? { proxy: cfg.proxy } : {}),
      ...(ctx.trace ? { trace: ctx.trace } : {}),
    });
    for await (const part of stream) {
      if (part.type === 'text') {
        parts.push(part.text);
        pacer.push(part.text);
      } else if (part.type === 'usage') usage = { promptTokens: part.promptTokens, completionTokens: part.completionTokens };
      else {
        finishReason = part.finishReason;
        toolCalls = part.toolCalls;
      }
      // The flush that learns the journal is behind runs after the next read began: at most one more
      // delta goes out before this waits.
      if (behind) {
        behind = false;
        await ctx.drained();
      }
    }
  } catch (e) {
    pacer.flush();
    const text = answerText();
    if (e instanceof ModelCancelledError || ctx.signal.aborted) {
      emit('message.completed', { turnId, text, finishReason: 'cancelled' });
      return { kind: 'cancelled' };
    }
    if (text) emit('message.completed', { turnId, text, finishReason: 'error' });
    if (e instanceof ModelError) return { kind: 'failed', error: e };
    return { kind: 'failed', error: { code: 'chat_internal', message: `the chat engine failed unexpectedly (${(e as Error).message}); the daemon log may say more`, retryable: false } };
  }
  pacer.flush();
  const text = answerText();
  // Ollama says `stop` when it asks for a tool: the calls decide.
  emit('message.completed', { turnId, text, finishReason: toolCalls.length > 0 ? 'tool_calls' : finishReason });
  if (usage) emit('usage', { turnId, ...usage });
  return { kind: 'answer', text, toolCalls };
}

async function runTool(ctx: ChatEngineContext, cfg: ChatEngineConfig, call: ToolCall): Promise<ToolRun> {
  const name = call.function.name;
  if (name !== SHELL_TOOL_NAME) return { status: 'failed', output: `[not run: there is no tool "${name}"; the only tool is shell {command, cwd?}]` };
  let args: unknown;
  try {
    args = JSON.parse(call.function.arguments || '{}');
  } catch (e) {
    return { status: 'failed', output: `[not run: the arguments are not valid JSON (${(e as Error).message}); call shell with {"command": "...", "cwd": "..."}]` };
  }
  const a = (args && typeof args === 'object' ? args : {}) as { command?: unknown; cwd?: unknown };
  if (typeof a.command !== 'string' || a.command.trim() === '')
    return { status: 'failed', output: '[not run: shell needs a non-empty "command" string]' };
  if (a.cwd !== undefined && a.cwd !== null && typeof a.cwd !== 'string') return { status: 'failed', output: '[not run: "cwd" must be a string path]' };
  const command = a.command;
  const cwd = typeof a.cwd === 'string' && a.cwd !== '' ? path.resolve(ctx.cwd, a.cwd) : ctx.cwd;

  if (ctx.approvalPolicy === 'ask') {
    let decision: 'approve' | 'deny';
    try {
      decision = await ctx.requestApproval({ command, cwd });
    } catch (e) {
      if (ctx.signal.aborted) return { status: 'interrupted', output: '[not run: the user cancelled the turn while it waited for approval]', cancelled: true };
      if (isAstraError(e) && e.reason === 'approval_expired') return { status: 'denied', output: `[not run: the approval expired — ${e.message.replace(/^The approval expired: /, '').replace(/\.$/, '')}; ask again if it is still needed]` };
      return { status: 'failed', output: `[not run: approval could not be asked (${(e as Error).message})]` };
    }
    if (decision !== 'approve') return { status: 'denied', output: '[not run: the user denied this command]' };
  }
  if (ctx.signal.aborted) return { status: 'interrupted', output: '[not run: the user cancelled the turn]', cancelled: true };

  const r = await ctx.runCommand({ command, cwd, captureBytes: cfg.toolOutputCapBytes });
  if (r.outcome === 'not_started') return { status: 'failed', output: `[not run: ${r.error ?? 'the command could not be started'}]` };
  const body = formatToolOutput(r.output);
  if (r.outcome === 'cancelled')
    return { status: 'interrupted', exitCode: r.exitCode, output: `${body}\n[interrupted: the user cancelled the turn while the command ran]`, cancelled: true };
  const end = r.signal ? `[killed by ${r.signal}]` : `[exit code ${r.exitCode}]`;
  return { status: r.exitCode === 0 && !r.signal ? 'succeeded' : 'failed', exitCode: r.exitCode, output: `${body}\n${end}` };
}
