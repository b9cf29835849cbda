import { Logger as PowertoolsLogger } from "@aws-lambda-powertools/logger";

export type LogAttributes = Record<string, unknown>;

/** The slice of a logger the library needs; Powertools' Logger satisfies it. */
export interface Logger {
  debug(message: string, attributes?: LogAttributes): void;
  info(message: string, attributes?: LogAttributes): void;
  warn(message: string, attributes?: LogAttributes): void;
  error(message: string, attributes?: LogAttributes): void;
}

type Level = "DEBUG" | "INFO" | "WARN" | "ERROR" | "SILENT";
const RANK: Record<Level, number> = { DEBUG: 10, INFO: 20, WARN: 30, ERROR: 40, SILENT: 100 };

/**
 * One readable line per entry, for a terminal: `12:00:01.250 INFO  event succeeded id=… attempt=1`.
 * In Lambda the JSON of Powertools is what CloudWatch wants; on a laptop a person reads the logs.
 */
export class ConsoleLogger implements Logger {
  constructor(
    private readonly level: Level = "INFO",
    private readonly write: (line: string) => void = (line) => process.stdout.write(`${line}\n`),
  ) {}

  debug(message: string, attributes?: LogAttributes) {
    this.log("DEBUG", message, attributes);
  }
  info(message: string, attributes?: LogAttributes) {
    this.log("INFO", message, attributes);
  }
  warn(message: string, attributes?: LogAttributes) {
    this.log("WARN", message, attributes);
  }
  error(message: string, attributes?: LogAttributes) {
    this.log("ERROR", message, attributes);
  }

  private log(level: Exclude<Level, "SILENT">, message: string, attributes?: LogAttributes) {
    if (RANK[level] < RANK[this.level]) return;
    const time = new Date().toISOString().slice(11, 23);
    const fields = Object.entries(attributes ?? {})
      .filter(([, value]) => value !== undefined)
      .map(([key, value]) => `${key}=${format(value)}`)
      .join(" ");
    this.write(`${time} ${level.padEnd(5)} ${message}${fields ? ` ${fields}` : ""}`);
  }
}

function format(value: unknown): string {
  if (value instanceof Error) return JSON.stringify(value.message);
  if (typeof value === "string") return /^[\w.:/@+-]*$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value);
}

export const silentLogger: Logger = new ConsoleLogger("SILENT");

/** Powertools in Lambda (structured JSON), the readable console logger elsewhere. */
export function createLogger(service: string, level: Level, inLambda: boolean): Logger {
  if (!inLambda) return new ConsoleLogger(level);
  const logger = new PowertoolsLogger({
    serviceName: service,
    logLevel: level === "SILENT" ? "SILENT" : level,
  });
  return {
    debug: (message, attributes) => logger.debug(message, attributes ?? {}),
    info: (message, attributes) => logger.info(message, attributes ?? {}),
    warn: (message, attributes) => logger.warn(message, attributes ?? {}),
    error: (message, attributes) => logger.error(message, attributes ?? {}),
  };
}
