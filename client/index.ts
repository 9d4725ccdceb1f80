// client/: AstraClient and what comes with it (docs/client.md).
export {
  AstraClient,
  type AstraClientOptions,
  type AcquireControllerOptions,
  type ApprovalHandler,
  type ApprovalRequest,
  type ClientEvents,
  type ClientState,
  type LeaseHolderInfo,
} from './client.js';
export { OutcomeUnknownError, SubscriptionClosedError } from './errors.js';
export type { StartTurnOptions } from './calls.js';
export type { Resynced } from './subscriptions.js';
export type { LeaseLost } from './leases.js';
export { Subscription, type SubscribeOptions, type ScreenSnapshot } from './subscription.js';
export { ControllerLease, type PersistedLease } from './lease.js';
export { TypedEmitter, type Listener } from './events.js';
export { backoffDelay, DEFAULT_BACKOFF, type BackoffOptions } from './backoff.js';
export type {
  CallArgs,
  CallOptions,
  ClientMethodName,
  ClientParams,
  DerivedApi,
  MethodFn,
  MethodNamespace,
  NamespaceApi,
  TopLevelMethodName,
  AutoFilledField,
} from './api.js';
export { connectOrSpawn, daemonEntryPath, DAEMON_NODE_FLAGS, type ConnectOptions, type Connected, type InitializeResult, type RestartWaitInfo, type WaitingInfo } from './connect.js';
