/** One Server-Sent Event as a client sees it. */
export interface SseEvent {
  readonly id: string | undefined;
  readonly event: string;
  readonly data: string;
}

/**
 * A minimal SSE client over a real HTTP connection (fetch), enough to test the stream: collects
 * events and comments, waits for a condition, and closes the connection like a browser would.
 */
export async function openSse(url: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const response = await fetch(url, {
    headers: { accept: "text/event-stream", ...headers },
    signal: controller.signal,
  });
  const events: SseEvent[] = [];
  const comments: string[] = [];
  let ended = false;
  let error: unknown;
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of waiters) w();
  };
  const pump = (async () => {
    if (!response.body || response.status !== 200) return;
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let end = buffer.indexOf("\n\n");
        while (end >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let id: string | undefined;
          let event = "message";
          const data: string[] = [];
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) comments.push(line.slice(1).trim());
            else if (line.startsWith("id:")) id = line.slice(3).trim();
            else if (line.startsWith("event:")) event = line.slice(6).trim();
            else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
          }
          if (data.length > 0) events.push({ id, event, data: data.join("\n") });
          end = buffer.indexOf("\n\n");
        }
        wake();
      }
    } catch (caught) {
      if (!controller.signal.aborted) error = caught;
    } finally {
      ended = true;
      wake();
    }
  })();
  return {
    status: response.status,
    response,
    events,
    comments,
    get ended() {
      return ended;
    },
    /** Resolves once `check` holds over the events so far; rejects after `timeoutMs`. */
    async until(check: (events: readonly SseEvent[]) => boolean, timeoutMs = 15_000, what = "events") {
      const deadline = Date.now() + timeoutMs;
      while (!check(events)) {
        if (error) throw error;
        if (ended) throw new Error(`stream ended before ${what}`);
        const left = deadline - Date.now();
        if (left <= 0)
          throw new Error(`timed out waiting for ${what}; got ${events.map((e) => e.event).join(",")}`);
        await new Promise<void>((resolve) => {
          const done = () => {
            waiters.delete(done);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(done, Math.min(left, 200));
          waiters.add(done);
        });
      }
      return events;
    },
    async close() {
      controller.abort();
      await pump;
    },
  };
}
