// The `acp` engine: any agent that speaks the Agent Client Protocol (opencode, codex-acp, Claude Code,
// Gemini CLI …) run as a session's engine — docs/engines.md, `acp`. One agent process per session,
// started at session/create (prepare: a command that cannot start fails the create before anything
// is journaled) and kept across turns; the ACP session id lives in the session's settings and in
// `acp.session` events (read back through history), so an agent that died or a daemon that restarted
// gets its session loaded again (`session/load`) or, when the agent cannot, a new one the event says so.
import type * as acp from '@agentclientprotocol/sdk';
import { AstraError } from '../../protocol/index.js';
import type { Engine, EngineContext, EngineEventType, EngineResult } from '../../runtime/index.js';
import { AgentExited, AgentLink } from './agent-link.js';
import { ACP_CONFIG_DEFAULTS, parseAcpOptions, storedAcpOptions, type AcpEngineConfig, type AcpSessionOptions } from './options.js';
import { approvalOptions, chooseOption, cutText, permissionText, TurnMapper, type Emit } from './update-map.js';

export const ACP_EVENT_TYPES = ['message.delta', 'message.completed', 'thought.delta', 'plan.updated', 'tool.call', 'tool.updated', 'acp.session', 'acp.update', 'error'] as const satisfies readonly EngineEventType[];

/** The turn's answer did not come within cancelGraceMs of session/cancel. */
class CancelUnanswered extends Error {}

export function createAcpEngine(config: Partial<AcpEngineConfig> = {}): Engine & { close(): void } {
  const cfg: AcpEngineConfig = { ...ACP_CONFIG_DEFAULTS, ...config };
  /** The agent of each session with one running, by Astra session id. */
  const links = new Map<string, AgentLink>();
  /** Agents started at session/create, by ACP session id, until the session's first turn takes one. */
  const handoff = new Map<string, { link: AgentLink; timer: NodeJS.Timeout }>();
  /** The timers that stop an idle session's agent. */
  const idle = new Map<string, NodeJS.Timeout>();

  /** Stops a session's agent after idleAgentMs without a turn (the next turn starts it again and loads its session). */
  function stopWhenIdle(sessionId: string, link: AgentLink): void {
    const timer = setTimeout(() => {
      idle.delete(sessionId);
      if (links.get(sessionId) === link) links.delete(sessionId);
      link.kill();
    }, cfg.idleAgentMs);
    timer.unref();
    idle.set(sessionId, timer);
  }

  async function connect(ctx: EngineContext, opts: AcpSessionOptions): Promise<AgentLink> {
    const kept = opts.acpSessionId !== undefined ? handoff.get(opts.acpSessionId) : undefined;
    const history = (await ctx.history?.()) ?? [];
    const last = [...history].reverse().find((e) => e.type === 'acp.session')?.data as { acpSessionId?: string } | undefined;
    if (kept && !last) {
      handoff.delete(opts.acpSessionId!);
      clearTimeout(kept.timer);
      if (!kept.link.exit) {
        ctx.emit('acp.session', { turnId: ctx.turnId, acpSessionId: opts.acpSessionId!, agent: kept.link.label, how: 'new' });
        return kept.link;
      }
    }
    const link = await AgentLink.start(opts, ctx.cwd, cfg);
    const prev = last?.acpSessionId ?? opts.acpSessionId;
    try {
      if (prev !== undefined && link.loadSession) {
        try {
          await link.loadSessionById(prev, ctx.cwd);
          ctx.emit('acp.session', { turnId: ctx.turnId, acpSessionId: prev, agent: link.label, how: 'loaded' });
          return link;
        } catch (e) {
          if (link.exit) throw e;
          const id = await link.newSession(ctx.cwd);
          ctx.emit('acp.session', { turnId: ctx.turnId, acpSessionId: id, agent: link.label, how: 'new', note: `session/load of ${prev} failed (${(e as Error).message}); a new ACP session started without the earlier context` });
          return link;
        }
      }
      const id = await link.newSession(ctx.cwd);
      const data: { turnId: string; acpSessionId: string; agent: string; how: 'new'; note?: string } = { turnId: ctx.turnId, acpSessionId: id, agent: link.label, how: 'new' };
      if (last !== undefined) data.note = `the agent cannot load ACP session ${prev} (it does not advertise loadSession); a new ACP session started without the earlier context`;
      ctx.emit('acp.session', data);
      return link;
    } catch (e) {
      link.kill();
      throw e;
    }
  }

  async function permission(ctx: EngineContext, params: acp.RequestPermissionRequest): Promise<acp.RequestPermissionResponse> {
    const cancelled: acp.RequestPermissionResponse = { outcome: { outcome: 'cancelled' } };
    let answer: { decision: 'approve' | 'deny'; optionId?: string } = { decision: 'approve' };
    if (ctx.approvalPolicy !== 'auto') {
      const req = { ...permissionText(params, cfg.maxTextChars), cwd: ctx.cwd };
      const options = approvalOptions(params.options, cfg.maxTextChars);
      try {
        answer = ctx.requestChoice ? await ctx.requestChoice({ ...req, options }) : { decision: await ctx.requestApproval(req) };
      } catch (e) {
        if (e instanceof AstraError && e.reason === 'approval_expired') answer = { decision: 'deny' };
        else return cancelled;
      }
    }
    const optionId = answer.optionId ?? chooseOption(params.options ?? [], answer.decision);
    return optionId === undefined ? cancelled : { outcome: { outcome: 'selected', optionId } };
  }

  async function runTurn(ctx: EngineContext): Promise<EngineResult> {
    const opts = storedAcpOptions(ctx.engineOptions);
    clearTimeout(idle.get(ctx.sessionId));
    idle.delete(ctx.sessionId);
    let link = links.get(ctx.sessionId);
    if (!link || link.broken) {
      link?.kill();
      links.delete(ctx.sessionId);
      link = await connect(ctx, opts);
      links.set(ctx.sessionId, link);
    }
    if (ctx.signal.aborted) return { status: 'cancelled' };
    const emit: Emit = (type, data) => ctx.emit(type, data);
    const mapper = new TurnMapper(ctx.turnId, emit, { text: cfg.maxTextChars, opaque: cfg.maxOpaqueChars });
    let writes = 0;
    link.turn = {
      update: (u) => (mapper.update(u) ? undefined : ctx.drained()),
      requestPermission: (p) => permission(ctx, p),
      wrote: (file, oldText, newText) => {
        const max = cfg.maxTextChars;
        const diff = { type: 'diff', path: file, oldText: oldText === null ? null : cutText(oldText, max), newText: cutText(newText, max) };
        emit('tool.call', { turnId: ctx.turnId, callId: `astra_fs_write_${++writes}`, name: 'fs/write_text_file', arguments: '', kind: 'edit', title: `Write ${file}`, status: 'completed', locations: [{ path: file }], content: [diff] });
      },
    };
    let graceTimer: NodeJS.Timeout | undefined;
    const unanswered = new Promise<never>((_, reject) => {
      const onAbort = () => {
        link!.cancel();
        graceTimer = setTimeout(() => reject(new CancelUnanswered()), cfg.cancelGraceMs);
      };
      if (ctx.signal.aborted) onAbort();
      else ctx.signal.addEventListener('abort', onAbort, { once: true });
    });
    unanswered.catch(() => {});
    try {
      const r = await Promise.race([link.prompt(ctx.input.text), unanswered]);
      mapper.end(r.stopReason);
      if (r.stopReason === 'cancelled' || ctx.signal.aborted) return { status: 'cancelled' };
      return r.stopReason === 'end_turn' ? { status: 'completed' } : { status: 'completed', reason: `the agent stopped: ${r.stopReason}` };
    } catch (e) {
      if (e instanceof CancelUnanswered) {
        mapper.end('cancelled');
        const why = `the agent did not answer session/cancel within ${Math.round(cfg.cancelGraceMs / 1000)} s; the turn was ended and the agent stopped (the next turn starts it again)`;
        ctx.emit('error', { turnId: ctx.turnId, message: why, reason: 'cancel_unanswered' });
        links.delete(ctx.sessionId);
        link.kill();
        return { status: 'cancelled', reason: why };
      }
      mapper.end('error');
      if (e instanceof AgentExited) {
        links.delete(ctx.sessionId);
        return { status: 'interrupted', exitCode: e.exit.code, error: e.message };
      }
      if (link.broken) {
        links.delete(ctx.sessionId);
        link.kill();
      }
      if (ctx.signal.aborted) return { status: 'cancelled' };
      return { status: 'failed', error: `the agent ${link.label} failed the prompt: ${(e as Error).message}` };
    } finally {
      clearTimeout(graceTimer);
      link.turn = undefined;
      if (links.get(ctx.sessionId) === link) stopWhenIdle(ctx.sessionId, link);
    }
  }

  return {
    events: ACP_EVENT_TYPES,
    history: ['acp.session'],
    parseOptions: parseAcpOptions,
    async prepare(options, session) {
      const opts = storedAcpOptions(options);
      const link = await AgentLink.start(opts, session.cwd, cfg);
      let id: string;
      try {
        id = await link.newSession(session.cwd);
      } catch (e) {
        link.kill();
        throw e;
      }
      const timer = setTimeout(() => {
        handoff.delete(id);
        link.kill();
      }, cfg.idleAgentMs);
      timer.unref();
      handoff.set(id, { link, timer });
      return { ...opts, acpSessionId: id };
    },
    runTurn,
    /** Stops every agent (the daemon's shutdown). */
    close() {
      for (const { link, timer } of handoff.values()) {
        clearTimeout(timer);
        link.kill();
      }
      handoff.clear();
      for (const t of idle.values()) clearTimeout(t);
      idle.clear();
      for (const link of links.values()) link.kill();
      links.clear();
    },
  };
}
