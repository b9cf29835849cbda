import { Component, type ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { type Connection, onConnection, setToken } from "./api.ts";
import { applyTheme, type ThemeChoice, themeChoice } from "./theme.ts";
import { DeadLetters } from "./views/dead-letters.tsx";
import { EventDetail } from "./views/event-detail.tsx";
import { Events } from "./views/events.tsx";
import { Leases } from "./views/leases.tsx";
import { Limits, optionalRoutes, Schedules } from "./views/optional.tsx";
import { Overview } from "./views/overview.tsx";
import { Stock } from "./views/stock.tsx";
import { Timeline } from "./views/timeline.tsx";

interface Route {
  readonly path: string[];
  readonly query: URLSearchParams;
}

function currentRoute(): Route {
  const [path = "", query = ""] = window.location.hash.replace(/^#\/?/, "").split("?");
  return { path: path.split("/").filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(query) };
}

function useRoute(): Route {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const update = () => setRoute(currentRoute());
    window.addEventListener("hashchange", update);
    return () => window.removeEventListener("hashchange", update);
  }, []);
  return route;
}

export function App() {
  const route = useRoute();
  const [connection, setConnection] = useState<Connection>("ok");
  const [optional, setOptional] = useState({ schedules: false, limits: false });
  const main = useRef<HTMLElement>(null);
  useEffect(() => onConnection(setConnection), []);
  useEffect(() => {
    void optionalRoutes().then(setOptional);
  }, []);
  const section = route.path[0] ?? "";
  // A new view: move focus to its heading, so keyboard and screen-reader users start there.
  useEffect(() => {
    main.current?.querySelector<HTMLElement>("h1")?.focus({ preventScroll: true });
  }, [section, route.path[1]]);

  const nav = [
    ["", "Overview"],
    ["timeline", "Timeline"],
    ["events", "Events"],
    ["dead-letters", "Dead letters"],
    ...(optional.schedules ? [["schedules", "Schedules"]] : []),
    ...(optional.limits ? [["limits", "Limits"]] : []),
    ["leases", "Leases"],
    ["stock", "Stock"],
  ] as const;

  return (
    <>
      <button type="button" class="skip" onClick={() => main.current?.focus()}>
        Skip to content
      </button>
      <header class="top">
        <svg class="brand" viewBox="0 0 16 20" width="16" height="20" aria-hidden="true">
          <path d="M2 1h12M2 19h12M3 1c0 6 10 6 10 9s-10 3-10 9M13 1c0 6-10 6-10 9s10 3 10 9" />
        </svg>
        <span class="brand-name">Hourglass</span>
        <nav aria-label="Dashboard">
          <ul>
            {nav.map(([path, label]) => (
              <li key={path}>
                <a href={`#/${path}`} aria-current={section === path ? "page" : undefined}>
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <LiveIndicator connection={connection} />
        <ThemeToggle />
      </header>
      {connection === "unreachable" && (
        <p class="banner bad" role="alert">
          The Hourglass server does not answer. What you see may be out of date; the page keeps trying every
          few seconds.
        </p>
      )}
      {connection === "unauthorized" && <TokenForm />}
      <main id="main" ref={main} tabIndex={-1}>
        <Boundary key={route.path.join("/")}>{view(route)}</Boundary>
      </main>
    </>
  );
}

function view(route: Route): ComponentChildren {
  const [section = "", id] = route.path;
  switch (section) {
    case "":
      return <Overview />;
    case "timeline":
      return <Timeline />;
    case "events":
      return id ? <EventDetail id={id} /> : <Events query={route.query} />;
    case "dead-letters":
      return <DeadLetters />;
    case "schedules":
      return <Schedules />;
    case "limits":
      return <Limits />;
    case "leases":
      return <Leases />;
    case "stock":
      return <Stock />;
    default:
      return (
        <>
          <h1 tabIndex={-1}>Not found</h1>
          <p>
            There is no “{section}” view. <a href="#/">Back to the overview</a>.
          </p>
        </>
      );
  }
}

function LiveIndicator({ connection }: { connection: Connection }) {
  const label = { ok: "live", unreachable: "offline", unauthorized: "signed out" }[connection];
  return (
    <span class={`live ${connection}`} role="status">
      <i aria-hidden="true" />
      {label}
    </span>
  );
}

function ThemeToggle() {
  const [choice, setChoice] = useState<ThemeChoice>(themeChoice);
  const next: Record<ThemeChoice, ThemeChoice> = { auto: "light", light: "dark", dark: "auto" };
  return (
    <button
      type="button"
      class="theme"
      onClick={() => {
        applyTheme(next[choice]);
        setChoice(next[choice]);
      }}
    >
      Theme: {choice}
    </button>
  );
}

function TokenForm() {
  const [token, set] = useState("");
  return (
    <form
      class="banner warn token"
      onSubmit={(e) => {
        e.preventDefault();
        setToken(token.trim());
        window.location.reload();
      }}
    >
      <label for="token">This Hourglass needs a bearer token (HOURGLASS_API_TOKENS). Token</label>
      <input id="token" type="password" value={token} onInput={(e) => set(e.currentTarget.value)} />
      <button type="submit">Use token</button>
    </form>
  );
}

/** A view that throws shows what went wrong, in place, and the rest of the page keeps working. */
class Boundary extends Component<{ children: ComponentChildren }, { error?: Error }> {
  override state: { error?: Error } = {};
  override componentDidCatch(error: Error) {
    this.setState({ error });
  }
  override render() {
    if (!this.state.error) return this.props.children;
    return (
      <div role="alert">
        <h1 tabIndex={-1}>This view failed</h1>
        <p class="error">{this.state.error.message}</p>
        <button type="button" onClick={() => this.setState({ error: undefined })}>
          Try again
        </button>
      </div>
    );
  }
}
