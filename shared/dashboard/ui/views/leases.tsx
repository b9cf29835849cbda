import { api, enc } from "../api.ts";
import { ErrorNote } from "../components/bits.tsx";
import { relative, utc } from "../format.ts";
import { usePoll } from "../poll.ts";
import type { Lease } from "../types.ts";
import { AddName, useWatched } from "./lookup.tsx";

const NAME = /^[A-Za-z0-9._:-]{1,128}$/;

/** Holders, fencing tokens and expiry of the leases a person watches, refreshed every 2 s. */
export function Leases() {
  const [names, setNames] = useWatched("hourglass.leases");
  return (
    <>
      <h1 tabIndex={-1}>Leases</h1>
      <AddName
        label="Lease name"
        pattern={NAME}
        rule="1 to 128 letters, digits, dots, underscores, colons or dashes"
        onAdd={(name) => setNames([...new Set([...names, name])])}
      />
      {names.length === 0 ? (
        <p class="muted">Add a lease name to watch its holder and expiry.</p>
      ) : (
        <table>
          <thead>
            <tr>
              <th scope="col">lease</th>
              <th scope="col">holder</th>
              <th scope="col" class="num">
                token
              </th>
              <th scope="col">expires</th>
              <th scope="col">
                <span class="sr-only">actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {names.map((name) => (
              <LeaseRow key={name} name={name} onRemove={() => setNames(names.filter((n) => n !== name))} />
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}

function LeaseRow({ name, onRemove }: { name: string; onRemove: () => void }) {
  const lease = usePoll(() => api<Lease>(`v1/leases/${enc(name)}`), 2_000, [name]);
  const l = lease.data;
  return (
    <tr>
      <th scope="row" class="mono">
        {name}
      </th>
      {lease.error ? (
        <td colSpan={3}>
          <ErrorNote error={lease.error} what="the lease" />
        </td>
      ) : (
        <>
          <td>{l ? l.held ? l.holder : <span class="muted">free</span> : "…"}</td>
          <td class="num">{l?.token ?? "…"}</td>
          <td title={l?.expiresAt ? utc(l.expiresAt) : undefined}>
            {l?.held && l.expiresAt ? relative(l.expiresAt) : "–"}
          </td>
        </>
      )}
      <td>
        <button type="button" onClick={onRemove}>
          Stop watching<span class="sr-only"> {name}</span>
        </button>
      </td>
    </tr>
  );
}
