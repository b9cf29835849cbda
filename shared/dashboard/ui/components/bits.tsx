import type { ComponentChildren } from "preact";
import { ApiError, Unreachable } from "../api.ts";
import type { EventStatus } from "../types.ts";

/** An error as a sentence a person can act on, announced by screen readers. */
export function ErrorNote({ error, what }: { error: Error | undefined; what: string }) {
  if (!error) return null;
  let text: string;
  if (error instanceof Unreachable) text = `Could not load ${what}: the server does not answer. Retrying…`;
  else if (error instanceof ApiError && error.status === 404)
    text = `Not found: ${error.detail ?? error.title}.`;
  else if (error instanceof ApiError)
    text = `Could not load ${what}: ${error.message} (HTTP ${error.status}).`;
  else text = `Could not load ${what}: ${error.message}`;
  return (
    <p class="error" role="alert">
      {text}
    </p>
  );
}

export function StatusBadge({ status }: { status: EventStatus }) {
  return <span class={`badge s-${status}`}>{status}</span>;
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" aria-live="polite">
      Loading {what}…
    </p>
  );
}

export function Section({
  title,
  children,
  id,
}: {
  title: string;
  children: ComponentChildren;
  id?: string;
}) {
  return (
    <section class="panel" aria-labelledby={id ?? slug(title)}>
      <h2 id={id ?? slug(title)}>{title}</h2>
      {children}
    </section>
  );
}

export function slug(text: string): string {
  return `h-${text.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
}

/** A labelled radio group, keyboard-usable as native radios are. */
export function Choice<T extends string>({
  legend,
  options,
  value,
  onChange,
}: {
  legend: string;
  options: readonly { value: T; label: string }[];
  value: T;
  onChange: (value: T) => void;
}) {
  const name = slug(legend);
  return (
    <fieldset class="choice">
      <legend>{legend}</legend>
      {options.map((o) => (
        <label key={o.value}>
          <input
            type="radio"
            name={name}
            value={o.value}
            checked={o.value === value}
            onChange={() => onChange(o.value)}
          />
          {o.label}
        </label>
      ))}
    </fieldset>
  );
}
