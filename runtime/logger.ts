// The logger shape the runtime writes to; pino satisfies it, tests pass a recorder.
export interface RuntimeLogger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export const silentLogger: RuntimeLogger = {
  info() {},
  warn() {},
  error() {},
};
