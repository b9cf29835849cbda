import { useCallback, useEffect, useRef, useState } from "preact/hooks";

export interface Polled<T> {
  readonly data: T | undefined;
  readonly error: Error | undefined;
  readonly loading: boolean;
  refresh(): void;
}

/**
 * Loads now, then again `intervalMs` after each answer (never two requests in flight), while the
 * tab is visible. The last good data stays on screen when a later load fails, next to the error.
 */
export function usePoll<T>(load: () => Promise<T>, intervalMs: number, deps: readonly unknown[]): Polled<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<Error | undefined>(undefined);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;

  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    setLoading(true);
    setData(undefined);
    setError(undefined);
    const run = async () => {
      if (document.visibilityState !== "hidden") {
        try {
          const next = await loadRef.current();
          if (stopped) return;
          setData(next);
          setError(undefined);
        } catch (e) {
          if (stopped) return;
          setError(e instanceof Error ? e : new Error(String(e)));
        }
        setLoading(false);
      }
      if (!stopped && intervalMs > 0) timer = setTimeout(run, intervalMs);
    };
    void run();
    return () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    };
  }, [...deps, tick, intervalMs]);

  const refresh = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, refresh };
}
