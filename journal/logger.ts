// What the journal tells a logger: damage it skipped at open. The runtime's logger (pino, or a test's
// recorder) satisfies it; the journal needs no more than this.
export interface JournalLogger {
  warn(obj: object, msg?: string): void;
}
