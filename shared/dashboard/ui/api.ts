/**
 * The page's only way out: the public API, relative to the page (so it works under `/dashboard`,
 * behind the CLI's signing proxy and under an API Gateway stage), with the caller's bearer token
 * when one is needed. Every failure becomes an ApiError or an Unreachable the views can show.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail: string | undefined,
  ) {
    super(detail ? `${title}: ${detail}` : title);
    this.name = "ApiError";
  }
}

export class Unreachable extends Error {
  constructor() {
    super("The Hourglass server does not answer. The page keeps trying.");
    this.name = "Unreachable";
  }
}

export type Connection = "ok" | "unreachable" | "unauthorized";

const TOKEN_KEY = "hourglass.token";
const listeners = new Set<(state: Connection) => void>();
let connection: Connection = "ok";

export function onConnection(listener: (state: Connection) => void): () => void {
  listeners.add(listener);
  listener(connection);
  return () => listeners.delete(listener);
}

function setConnection(state: Connection): void {
  if (state === connection) return;
  connection = state;
  for (const listener of listeners) listener(state);
}

export function setToken(token: string | undefined): void {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export interface Answer<T> {
  readonly status: number;
  readonly body: T;
  readonly headers: Headers;
}

export async function request<T>(
  path: string,
  init: { method?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = { accept: "application/json", ...init.headers };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.authorization = `Bearer ${token}`;
  if (init.body !== undefined) headers["content-type"] = "application/json";
  let response: Response;
  try {
    response = await fetch(new URL(path, document.baseURI), {
      method: init.method ?? "GET",
      headers,
      body: init.body === undefined ? null : JSON.stringify(init.body),
    });
  } catch {
    setConnection("unreachable");
    throw new Unreachable();
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  // A gateway in front of a stopped server answers 502/504 without a problem document.
  if ((response.status === 502 || response.status === 504) && !isProblem(body)) {
    setConnection("unreachable");
    throw new Unreachable();
  }
  setConnection(response.status === 401 ? "unauthorized" : "ok");
  if (!response.ok) {
    const problem = isProblem(body) ? body : { title: response.statusText || "Request failed" };
    throw new ApiError(response.status, problem.title, problem.detail);
  }
  return { status: response.status, body: body as T, headers: response.headers };
}

export async function api<T>(path: string, init?: Parameters<typeof request>[1]): Promise<T> {
  return (await request<T>(path, init)).body;
}

function isProblem(body: unknown): body is { title: string; detail?: string } {
  return typeof body === "object" && body !== null && typeof (body as { title?: unknown }).title === "string";
}

export const enc = encodeURIComponent;
