// engines/acp/: the `acp` engine (an Agent Client Protocol agent run per session; docs/engines.md).
export { ACP_EVENT_TYPES, createAcpEngine } from './acp-engine.js';
export { ACP_CONFIG_DEFAULTS, acpEngineConfig, parseAcpOptions, type AcpEngineConfig, type AcpSessionOptions } from './options.js';
export { TurnMapper, chooseOption, cutText, opaque, permissionText, toolDetail } from './update-map.js';
