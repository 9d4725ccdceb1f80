// engines/: the engines Astra ships — `shell`, `chat`, `acp` and `synthetic` — each an implementation of the
// runtime's Engine contract (runtime/engine.ts), registered at composition (daemon/daemon.ts), never
// named by the core.
export { createShellEngine, runShellCommand, type ShellCommand, type ShellCommandOutcome, type ShellEngineOptions, type TerminalMode } from './shell-engine.js';
export { createChatEngine, chatEngineConfig, parseChatOptions, type ChatEngineConfig, type ChatSessionOptions } from './chat/index.js';
export { acpEngineConfig, createAcpEngine, parseAcpOptions, type AcpEngineConfig, type AcpSessionOptions } from './acp/index.js';
export { createSyntheticEngine, parseSyntheticSpec, type SyntheticSpec } from './synthetic-engine.js';
